/**
 * The HTTP benchmark's bare anchor on one more thread (bench/http.bench.ts --http-threads): a
 * Bun.serve on the given port with SO_REUSEPORT that reads the request and answers fixed bytes.
 */
declare const self: Worker;

let server: ReturnType<typeof Bun.serve> | null = null;
self.onmessage = (event: MessageEvent<{ port: number; responseText: string } | "stop">) => {
  if (event.data === "stop") {
    server?.stop(true);
    self.postMessage("stopped");
    return;
  }
  const { port, responseText } = event.data;
  const init = { headers: { "content-type": "application/json" } };
  server = Bun.serve({
    hostname: "127.0.0.1",
    port,
    reusePort: true,
    async fetch(request) {
      await request.text();
      return new Response(responseText, init);
    },
  });
  self.postMessage("up");
};
export {};
