/**
 * One load at a time through the budget checks and the swap: each waiter sees what the ones
 * before it admitted, while the loads' reads and program loads still overlap.
 */
export class AdmissionTurn {
  private last: Promise<void> = Promise.resolve();

  /** Waits for this caller's turn; call the returned function to pass it on. */
  async wait(): Promise<() => void> {
    let release = () => {};
    const turn = new Promise<void>((r) => {
      release = r;
    });
    const before = this.last;
    this.last = before.then(() => turn);
    await before;
    return release;
  }
}
