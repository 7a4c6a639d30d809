import { expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { processStartTime, tryLock } from "../src/lock.ts";

import { tempDir } from "./support/fixtures.ts";

/**
 * A compile lock must not outlive its holder, even when the holder's pid is alive again: a
 * restarted container's PID 1 (the usual worker) is a new process under the old pid at once.
 */
const LOCK_SRC = join(import.meta.dir, "..", "src", "lock.ts");
const bootId = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();

test("a live pid that is another process (other start time) or a lock from before a reboot is taken over", () => {
  using tmp = tempDir();
  const path = join(tmp.path, "x.lock");
  const mine = processStartTime(process.pid);
  expect(mine).toMatch(/^\d+$/);
  const owner = { pid: process.pid, host: hostname(), token: "t", createdAt: Date.now(), bootId };
  const whys: string[] = [];
  const onStale = (_p: string, _o: unknown, why: string) => whys.push(why);
  // The same pid, alive, with the owner's own start time: held.
  writeFileSync(path, JSON.stringify({ ...owner, startTime: mine }));
  expect(tryLock(path, { staleMs: 600_000, onStale })).toBeNull();
  expect(whys).toEqual([]);
  // The same pid, started at another time: the owner is gone.
  writeFileSync(path, JSON.stringify({ ...owner, startTime: "1" }));
  expect(tryLock(path, { staleMs: 600_000, onStale })).toBeNull();
  expect(whys[0]).toContain(`pid ${process.pid} is another process now`);
  // Taken by another boot of this host.
  writeFileSync(path, JSON.stringify({ ...owner, startTime: mine, bootId: "another-boot" }));
  tryLock(path, { staleMs: 600_000, onStale });
  expect(whys[1]).toContain("rebooted");
  const held = tryLock(path, { staleMs: 600_000 });
  expect(held).not.toBeNull();
  const written = JSON.parse(readFileSync(path, "utf8"));
  expect(written).toMatchObject({ pid: process.pid, bootId, startTime: mine });
  held?.release();
});

/** Whether this machine lets us make PID namespaces (root, util-linux unshare). */
const canUnshare =
  process.getuid?.() === 0 &&
  Bun.spawnSync(["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "true"]).exitCode === 0;

test.skipIf(!canUnshare)(
  "kill -9 of a PID 1 holder, then a new PID 1 (a container restart): the lock is taken at once (it waited 10 min)",
  async () => {
    using tmp = tempDir();
    const path = join(tmp.path, "entry.xprog.lock");
    const script = join(tmp.path, "holder.ts");
    writeFileSync(
      script,
      `import { tryLock } from ${JSON.stringify(LOCK_SRC)};
       // A try that finds a lock of a gone owner takes it over; the next one gets it.
       const take = () => tryLock(${JSON.stringify(path)}, { staleMs: 600_000 });
       const lock = take() ?? take();
       console.log(lock ? "held" : "busy");
       if (lock && process.argv[2] === "hold") await Bun.sleep(60_000);`,
    );
    const inNewPidNamespace = (mode: string) =>
      Bun.spawn(["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", process.execPath, script, mode], {
        stdout: "pipe",
      });
    const first = inNewPidNamespace("hold");
    const reader = first.stdout.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain("held");
    expect(JSON.parse(readFileSync(path, "utf8")).pid).toBe(1);
    first.kill("SIGKILL");
    await first.exited;
    const second = inNewPidNamespace("try");
    expect(await new Response(second.stdout).text()).toContain("held");
    expect(await second.exited).toBe(0);
  },
  30_000,
);

if (!canUnshare) {
  test.skip("PID-namespace restart case: needs root and util-linux unshare to make a PID namespace", () => {});
}
