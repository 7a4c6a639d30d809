/**
 * Child of the load pool's tests: loads a program through the loader threads, as a load and a
 * hedged copy, and leaves the backend undisposed. It must exit on its own once both are done: a
 * copy still running keeps the process alive until it is destroyed, idle loader threads may not.
 * argv: <mock plugin path>. Prints {"offThread": n, "outputs": n} as it exits.
 */
import { createPjrtBackend } from "../../src/backend.ts";
import { mockControls } from "./build-mock.ts";

const pluginPath = process.argv[2] as string;
const mock = mockControls(pluginPath);
const backend = createPjrtBackend({ pluginPath, isolateCompile: false, loadThreads: 2, hedgeLoads: 1 });
// Slow enough that the copy starts before the first load is answered.
const source = new TextEncoder().encode("module @idle { mock.sleep_ms=50 }");
const compiled = await backend.compile({ bytes: source, format: "text" }, {});
const program = await backend.serialize(compiled);
const loaded = await backend.deserialize(program, {});
process.on("exit", () => {
  console.log(JSON.stringify({ offThread: mock.loadsOffClientThread(), outputs: loaded.outputCount }));
});
