/**
 * In-process single flight: one chain of promises per key, so two requests for the same cache
 * entry in one process run one after the other. The second then finds the entry the first wrote
 * and loads it (a hit) instead of compiling again, and gets its own executable to own.
 */
export class KeyedMutex {
  readonly #tails = new Map<string, Promise<unknown>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const result = previous.then(fn, fn);
    const tail = result.catch(() => undefined);
    this.#tails.set(key, tail);
    try {
      return await result;
    } finally {
      // Drop the key once nobody queued behind us, so the map does not grow forever.
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }

  get size(): number {
    return this.#tails.size;
  }
}
