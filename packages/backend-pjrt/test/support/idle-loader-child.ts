/**
 * Child of the load pool's tests: loads a program through the loader threads and leaves the
 * backend undisposed. It must exit on its own once the load is done: idle loader threads may not
 * keep a process alive. argv: <mock plugin path>. Prints {"offThread": n} on success.
 */
import { createPjrtBackend } from "../../src/backend.ts";
import { mockControls } from "./build-mock.ts";

const pluginPath = process.argv[2] as string;
const mock = mockControls(pluginPath);
const backend = createPjrtBackend({ pluginPath, isolateCompile: false, loadThreads: 2 });
const compiled = await backend.compile({ bytes: new TextEncoder().encode("module @idle {}"), format: "text" }, {});
const program = await backend.serialize(compiled);
const loaded = await backend.deserialize(program, {});
console.log(JSON.stringify({ offThread: mock.loadsOffClientThread(), outputs: loaded.outputCount }));
