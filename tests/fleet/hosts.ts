import { spawnSync } from "node:child_process";

/**
 * Separate "hosts" for the fleet tests: network namespaces made by the test, each joined to one
 * bridge in the test's own namespace by a veth pair and given its own address. Only addresses
 * inside these namespaces and on this bridge are used; everything is deleted afterwards.
 */
export interface TestNet {
  /** The bridge's address in the test's namespace: where PostgreSQL listens. */
  readonly gateway: string;
  readonly hosts: readonly { readonly ns: string; readonly address: string }[];
  /** Runs argv inside host i's namespace (the pid is the command's own: ip execs it). */
  argv(i: number, command: readonly string[]): string[];
  remove(): void;
}

function ip(args: readonly string[]): void {
  const r = spawnSync("ip", [...args], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`ip ${args.join(" ")}: ${(r.stderr || r.error?.message || "").trim()}`);
}

/** Why namespaces cannot be made here, or null when they can. */
export function netnsUnavailable(): string | null {
  if (process.platform !== "linux") return "network namespaces need Linux";
  if (typeof process.getuid === "function" && process.getuid() !== 0) return "network namespaces need root";
  const probe = `xfp${process.pid.toString(16).slice(-5)}`;
  const r = spawnSync("ip", ["netns", "add", probe], { encoding: "utf8" });
  if (r.error) return "ip (iproute2) is not installed: apt-get install iproute2";
  if (r.status !== 0) return `cannot make a network namespace: ${r.stderr.trim()}`;
  spawnSync("ip", ["netns", "del", probe]);
  return null;
}

export function makeTestNet(count: number): TestNet {
  const tag = crypto.getRandomValues(new Uint8Array(2));
  const prefix = `xf${[...tag].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
  // 10.(200-249).x.0/24: a private range picked at random so parallel runs do not collide.
  const subnet = `10.${200 + (tag[0]! % 50)}.${tag[1]!}`;
  const bridge = `${prefix}br`;
  const hosts = Array.from({ length: count }, (_, i) => ({ ns: `${prefix}h${i}`, address: `${subnet}.${10 + i}` }));
  const made: string[] = [];
  const remove = () => {
    for (const ns of made) spawnSync("ip", ["netns", "del", ns]);
    spawnSync("ip", ["link", "del", bridge]);
  };
  try {
    ip(["link", "add", bridge, "type", "bridge"]);
    ip(["addr", "add", `${subnet}.1/24`, "dev", bridge]);
    ip(["link", "set", bridge, "up"]);
    hosts.forEach((h, i) => {
      ip(["netns", "add", h.ns]);
      made.push(h.ns);
      ip(["link", "add", `${prefix}v${i}`, "type", "veth", "peer", "name", `${prefix}p${i}`]);
      ip(["link", "set", `${prefix}p${i}`, "netns", h.ns]);
      ip(["link", "set", `${prefix}v${i}`, "master", bridge]);
      ip(["link", "set", `${prefix}v${i}`, "up"]);
      ip(["-n", h.ns, "addr", "add", `${h.address}/24`, "dev", `${prefix}p${i}`]);
      ip(["-n", h.ns, "link", "set", `${prefix}p${i}`, "up"]);
      ip(["-n", h.ns, "link", "set", "lo", "up"]);
    });
  } catch (e) {
    remove();
    throw e;
  }
  return {
    gateway: `${subnet}.1`,
    hosts,
    argv: (i, command) => ["ip", "netns", "exec", hosts[i]!.ns, ...command],
    remove,
  };
}
