import type { FileSnapshot } from "../../src/core/events.js";

/**
 * Records without their owner and group (`uid`, `gid`), which depend on who runs the tests: for comparing records
 * with ones spelled out. The tests of owners compare them on their own (test/rewind/hard-links-owners.test.ts).
 */
export function ownerless<T extends FileSnapshot | undefined>(record: T): T {
  if (record === undefined || !("uid" in record)) return record;
  const { uid: _uid, gid: _gid, ...rest } = record as FileSnapshot & { uid?: number; gid?: number };
  return rest as T;
}

/** {@link ownerless} of each record. */
export function allOwnerless<T extends FileSnapshot>(records: readonly T[]): T[] {
  return records.map(ownerless);
}
