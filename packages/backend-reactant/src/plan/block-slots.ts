/** Which block of a function defines each slot: one typed array per function, grown with it. */
export class SlotOwners {
  /** Per slot, the id of the block that defines it (0: none yet). */
  owner = new Int32Array(256);
  private blocks = 0;

  /** The slots of a new block. */
  newBlock(): BlockSlots {
    return new BlockSlots(this, ++this.blocks);
  }

  own(slot: number, block: number): void {
    if (slot >= this.owner.length) {
      const grown = new Int32Array(Math.max(this.owner.length * 2, slot + 1));
      grown.set(this.owner);
      this.owner = grown;
    }
    this.owner[slot] = block;
  }
}

/** A read-only view of a set of slots. */
export interface SlotSet {
  has(slot: number): boolean;
}

/**
 * The slots one block defines (and frees), as a set. An inlined callee's values live in its
 * caller's block, so its scope adds to the caller's.
 */
export class BlockSlots implements SlotSet {
  constructor(
    private readonly owners: SlotOwners,
    readonly id: number,
  ) {}

  add(slot: number): void {
    this.owners.own(slot, this.id);
  }

  has(slot: number): boolean {
    return this.owners.owner[slot] === this.id;
  }
}
