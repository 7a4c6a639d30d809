// An S3-compatible server for tests (s3rver, from npm): serves `--dir` on 127.0.0.1 with the
// buckets named by --bucket, prints its port on stdout, and runs until killed. Run with node.
import S3rver from "s3rver";

const arg = (name) => process.argv[process.argv.indexOf(name) + 1];
const server = new S3rver({
  address: "127.0.0.1",
  port: 0,
  silent: true,
  directory: arg("--dir"),
  configureBuckets: [{ name: arg("--bucket") }],
});
const { port } = await server.run();
process.stdout.write(`${port}\n`);
