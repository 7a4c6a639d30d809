import type { BlockSlots } from "./block-slots.ts";

/**
 * The value names a block sees, each resolved to its slot once at compile time. Names missing
 * here are looked up in the enclosing block and recorded as captures of every block crossed.
 */
export class Scope {
  private readonly names = new Map<string, number>();
  readonly captures = new Set<number>();
  /**
   * Slots this block defines (and frees). An inlined callee's scope shares its caller's set:
   * its values live in the caller's block.
   */
  constructor(
    readonly parent: Scope | null,
    readonly locals: BlockSlots,
  ) {}

  define(name: string, slot: number): number {
    this.names.set(name, slot);
    this.locals.add(slot);
    return slot;
  }

  /** Another name for an existing slot (a callee argument, an inlined call's result). */
  alias(name: string, slot: number): void {
    this.names.set(name, slot);
  }

  /** Resolves a name, recording it as a capture of every block it crosses. */
  resolve(name: string): number | undefined {
    const own = this.names.get(name);
    if (own !== undefined) return own;
    const outer = this.parent?.resolve(name);
    if (outer !== undefined) this.captures.add(outer);
    return outer;
  }

  /** A slot a nested block reads: a capture of this block too unless this block defines it. */
  nestedUse(slot: number): number {
    if (!this.locals.has(slot)) this.captures.add(slot);
    return slot;
  }
}
