/**
 * Readers/writer lock for the device: requests share it, a memory probe takes it exclusively so no
 * other model's run inflates the peak it measures.
 */
export class DeviceLock {
  private readers = 0;
  private writer = false;
  private readonly queue: Array<{ exclusive: boolean; resolve: () => void }> = [];

  async shared<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire(false);
    try {
      return await fn();
    } finally {
      this.releaseShared();
    }
  }

  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire(true);
    try {
      return await fn();
    } finally {
      this.writer = false;
      this.pump();
    }
  }

  private acquire(exclusive: boolean): Promise<void> {
    if (this.queue.length === 0 && !this.writer && (!exclusive || this.readers === 0)) {
      if (exclusive) this.writer = true;
      else this.readers++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.queue.push({ exclusive, resolve }));
  }

  private releaseShared(): void {
    this.readers--;
    this.pump();
  }

  private pump(): void {
    while (this.queue.length > 0 && !this.writer) {
      const head = this.queue[0];
      if (!head) break;
      if (head.exclusive) {
        if (this.readers > 0) break;
        this.queue.shift();
        this.writer = true;
        head.resolve();
        break;
      }
      this.queue.shift();
      this.readers++;
      head.resolve();
    }
  }
}
