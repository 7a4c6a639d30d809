/**
 * Waits until the server has had no request in progress for `quietMs`, at most `maxMs`. At
 * shutdown, requests a client sent just before the signal may still be on their way, in the
 * kernel's accept queue or on a pooled connection: closing the port at once resets them, while a
 * moment longer lets the draining worker answer them (503) so the client knows to go elsewhere.
 */
export async function quietPort(
  server: { readonly pendingRequests: number },
  { quietMs = 100, maxMs = 2_000, pollMs = 10 } = {},
): Promise<void> {
  const end = performance.now() + maxMs;
  let quietSince = performance.now();
  while (performance.now() < end) {
    if (server.pendingRequests > 0) quietSince = performance.now();
    else if (performance.now() - quietSince >= quietMs) return;
    await Bun.sleep(pollMs);
  }
}
