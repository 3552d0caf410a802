// What every backend accepts as a blob or record name. Names become file names (fs) or keys, so
// they are checked before any use: a blob "name" like "../other/events.jsonl" must not reach a path.

const RECORD_NAME = /^[a-z0-9][a-z0-9._-]{0,100}$/;
export function isRecordName(name: string): boolean {
  return RECORD_NAME.test(name);
}

const HASH = /^[0-9a-f]{64}$/;
export function isBlobHash(hash: string): boolean {
  return HASH.test(hash);
}
