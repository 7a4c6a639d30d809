/** Child process of `probePjrtPlugin`: probes the plugin at argv[2] and prints the result as JSON. */
import { probeInProcess } from "./probe.ts";

const path = process.argv[2] ?? "";
console.log(JSON.stringify(probeInProcess(path)));
process.exit(0);
