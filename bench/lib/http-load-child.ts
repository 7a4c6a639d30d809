/** The fetch load generator as a process of its own (bench/lib/http-load.ts): one JSON result line. */
import { type HttpLoadSpec, fetchLoad } from "./http-load.ts";

console.log(JSON.stringify(await fetchLoad(JSON.parse(process.argv[2] as string) as HttpLoadSpec)));
