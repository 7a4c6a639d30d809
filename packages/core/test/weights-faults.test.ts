import { afterAll, describe, expect, test } from "bun:test";
import { appendFileSync, readFileSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { XlaserveError, loadBundle } from "../src/index.ts";
import { readFileStable } from "../src/bundle/stable-read.ts";
import { tempRepository } from "./helpers/bundles.ts";

/**
 * What can happen to a weights file on disk while a worker reads it: truncated in place (cp and
 * scp over the live file), half-written, still being written. None may crash the process or hand
 * out bytes that are not the file's.
 */
const repos: ReturnType<typeof tempRepository>[] = [];
afterAll(() => {
  for (const r of repos) r.dispose();
});

/** A fresh copy of the MLP example (the folder name must stay the manifest's name). */
function freshMlp(): string {
  const repo = tempRepository();
  repos.push(repo);
  return repo.copy("mlp");
}

const weightsOf = (dir: string) => join(dir, "weights.safetensors");

async function errorOf(p: Promise<unknown>): Promise<XlaserveError> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(XlaserveError);
  return e as XlaserveError;
}

describe("weights on disk change under the worker", () => {
  test("truncating the file in place after it was loaded never turns into a signal (it was SIGBUS)", async () => {
    const dir = freshMlp();
    // A process of its own: the old memory-mapped weights died of SIGBUS on the first access
    // past the new end, taking the whole process with them.
    const script = `
      import { truncateSync } from "node:fs";
      import { loadBundle } from ${JSON.stringify(join(import.meta.dir, "..", "src", "index.ts"))};
      const bundle = await loadBundle(${JSON.stringify(dir)});
      truncateSync(${JSON.stringify(weightsOf(dir))}, 0);
      let sum = 0;
      for (const name of bundle.weights.argumentOrder) {
        const t = bundle.weights.tensor(name).data;
        for (let i = 0; i < t.length; i++) sum += Number(t[i]);
      }
      console.log(sum.toFixed(6));
    `;
    const before = await loadBundle(freshMlp());
    let expected = 0;
    for (const name of before.weights.argumentOrder) {
      const t = before.weights.tensor(name).data;
      for (let i = 0; i < t.length; i++) expected += Number(t[i]);
    }
    const child = Bun.spawnSync([process.execPath, "-e", script], { stderr: "pipe" });
    expect({ signal: child.signalCode ?? null, exit: child.exitCode }).toEqual({ signal: null, exit: 0 });
    expect(child.stdout.toString().trim()).toBe(expected.toFixed(6));
  });

  test("a truncated file is refused naming the problem, whatever its header says", async () => {
    const dir = freshMlp();
    const size = readFileSync(weightsOf(dir)).length;
    truncateSync(weightsOf(dir), Math.floor(size / 2));
    const e = await errorOf(loadBundle(dir));
    expect(e.code).toBe("WEIGHTS_CORRUPT");
    expect(e.message).toContain("run past the data section");
  });

  test("a half-written file of the full size is refused by the manifest's sha256 (it was loaded)", async () => {
    const dir = freshMlp();
    const bytes = new Uint8Array(readFileSync(weightsOf(dir)));
    // An in-place rewrite that stopped halfway: the header and sizes are right, the second half
    // of the data is still zeros (a preallocated download, or dd conv=notrunc cut short).
    bytes.fill(0, Math.floor(bytes.length / 2));
    writeFileSync(weightsOf(dir), bytes);
    const e = await errorOf(loadBundle(dir));
    expect(e.code).toBe("WEIGHTS_CORRUPT");
    expect(e.details.file).toBe("weights.safetensors");
    expect(e.message).toContain("does not match the manifest's provenance.weights_sha256");
  });

  test("a file written to while it is read is refused as still changing", async () => {
    const dir = freshMlp();
    const path = weightsOf(dir);
    const where = { bundle: "mlp", file: "weights.safetensors" };
    // The hook runs once the file is open and measured, before the first byte is read.
    const grown = await errorOf(
      readFileStable(path, where, () => {
        appendFileSync(path, "more");
        return false;
      }),
    );
    expect(grown.message).toContain("changed while it was being read");
    const shrunk = await errorOf(
      readFileStable(path, where, () => {
        truncateSync(path, 100);
        return false;
      }),
    );
    expect(shrunk.message).toContain("it shrank to");
  });

  test("a file that matched its sha256 is not hashed again until it changes", async () => {
    const dir = freshMlp();
    const keys: string[] = [];
    const verified = { has: (k: string) => keys.includes(k), add: (k: string) => void keys.push(k) };
    await loadBundle(dir, { verifiedWeights: verified });
    expect(keys).toHaveLength(1);
    const [dev, ino, size] = (keys[0] as string).split(":");
    expect(Number(size)).toBe(readFileSync(weightsOf(dir)).length);
    expect(dev && ino).toBeTruthy();
    await loadBundle(dir, { verifiedWeights: verified });
    expect(keys).toHaveLength(1);
    // Rewritten with other bytes: a new mtime, so it is hashed (and refused) again.
    const bytes = new Uint8Array(readFileSync(weightsOf(dir)));
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 0xff;
    writeFileSync(weightsOf(dir), bytes);
    const e = await errorOf(loadBundle(dir, { verifiedWeights: verified }));
    expect(e.message).toContain("weights_sha256");
  });
});
