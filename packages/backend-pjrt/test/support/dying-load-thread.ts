/**
 * A stand-in for load-thread.ts in the load pool's tests: a program reading "die" makes the thread
 * throw, "exit" makes it exit, and anything else is "loaded" at address 42.
 */
declare const self: Worker;
export {};

self.onmessage = (event: MessageEvent<{ program: ArrayBuffer }>) => {
  const text = new TextDecoder().decode(event.data.program);
  if (text === "die") throw new Error("the thread was told to die");
  if (text === "exit") process.exit(7);
  self.postMessage({ handle: 42 });
};
