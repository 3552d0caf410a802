import { randomFillSync } from "node:crypto";
import { InvalidSessionIdError } from "./errors.js";

// Crockford base32: no I, L, O, U, so ids read aloud and sort the same in every locale.
const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

let lastTime = -1;

// The id's digits as character codes: 10 of the time, then 16 random ones, changed in place. The id is made from
// them in one string: built a character at a time (a string per character, its random digits copied at each
// increment), an id was more garbage than anything else an append's envelope made (bench/postgres.bench.ts, the
// store's append against a bare insert).
const CODES = Array.from(ALPHABET, (c) => c.charCodeAt(0));
const code = new Array<number>(26).fill(CODES[0]!);
const digit = new Uint8Array(26);

/**
 * A 26-character id that sorts by creation time (ULID layout: 10 chars of milliseconds, 16 of
 * randomness). Within one millisecond the random part is incremented, so ids made by one
 * process are strictly increasing even when the clock does not move.
 */
export function newId(now: number = Date.now()): string {
  if (now <= lastTime) increment();
  else {
    lastTime = now;
    setTime(now);
    freshRandom();
  }
  return String.fromCharCode(...code);
}

function setDigit(i: number, d: number): void {
  digit[i] = d;
  code[i] = CODES[d]!;
}

function setTime(time: number): void {
  for (let i = 9; i >= 0; i--, time = Math.floor(time / 32)) setDigit(i, time % 32);
}

// Random digits drawn 64 ids' worth at a time: one call into the CSPRNG per 64 ids, not per id.
const pool = new Uint8Array(16 * 64);
let poolAt = pool.length;
function freshRandom(): void {
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  for (let i = 0; i < 16; i++) setDigit(10 + i, pool[poolAt + i]! & 31);
  poolAt += 16;
}

function increment(): void {
  for (let i = 25; i >= 10; i--) {
    const d = digit[i]! + 1;
    if (d < 32) {
      setDigit(i, d);
      return;
    }
    setDigit(i, 0);
  }
  // wrapped after 32^16 ids in one millisecond: not reachable in practice
}

const SESSION_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

/** Throws INVALID_SESSION_ID unless `id` is safe to use as one folder name on every platform. */
export function assertSessionId(id: unknown): asserts id is string {
  if (typeof id !== "string" || !SESSION_ID.test(id)) throw new InvalidSessionIdError(id);
}
