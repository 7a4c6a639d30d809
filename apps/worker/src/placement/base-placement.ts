import type { AbstractBackend, DeviceBuffer, HostTensor } from "@xlaserve/core";
import { uploadAll } from "@xlaserve/core";
import type { Placement } from "./placement.ts";

/**
 * The placement a program gets at load, from what the backend offers: a backend that runs a
 * whole request in one call (the engine on its own thread) is asked for that; any other is driven
 * through the three calls of the contract.
 */
export function basePlacement(backend: AbstractBackend): Placement {
  const run = backend.run;
  if (run) {
    return {
      where: "engine-thread",
      run: (executable, inputs, weights) => run.call(backend, executable, inputs, weights),
    };
  }
  return {
    where: "direct",
    async run(executable, inputs, weights) {
      const args: DeviceBuffer[] = [];
      let results: DeviceBuffer[] = [];
      try {
        args.push(...(await uploadAll(backend, inputs)));
        results = await backend.execute(executable, [...args, ...weights]);
        return await Promise.all(results.map((b): Promise<HostTensor> => backend.download(b)));
      } finally {
        for (const b of args) b.dispose();
        for (const b of results) b.dispose();
      }
    },
  };
}
