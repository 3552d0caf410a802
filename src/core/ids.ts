import { randomFillSync } from "node:crypto";
import { InvalidSessionIdError } from "./errors.js";

// Crockford base32: no I, L, O, U, so ids read aloud and sort the same in every locale.
const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

let lastTime = -1;
let lastRandom: number[] = [];

/**
 * A 26-character id that sorts by creation time (ULID layout: 10 chars of milliseconds, 16 of
 * randomness). Within one millisecond the random part is incremented, so ids made by one
 * process are strictly increasing even when the clock does not move.
 */
export function newId(now: number = Date.now()): string {
  if (now <= lastTime) {
    lastRandom = increment(lastRandom);
  } else {
    lastTime = now;
    lastTimeText = timeText(now);
    lastRandom = freshRandom();
  }
  let id = lastTimeText;
  for (const digit of lastRandom) id += ALPHABET[digit];
  return id;
}

let lastTimeText = "";

function timeText(time: number): string {
  let text = "";
  for (let i = 0; i < 10; i++, time = Math.floor(time / 32)) text = ALPHABET[time % 32] + text;
  return text;
}

// Random digits drawn 64 ids' worth at a time: one call into the CSPRNG per 64 ids, not per id.
const pool = new Uint8Array(16 * 64);
let poolAt = pool.length;
function freshRandom(): number[] {
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const digits = new Array<number>(16);
  for (let i = 0; i < 16; i++) digits[i] = pool[poolAt + i]! & 31;
  poolAt += 16;
  return digits;
}

function increment(digits: number[]): number[] {
  const next = digits.slice();
  for (let i = next.length - 1; i >= 0; i--) {
    const d = next[i]! + 1;
    if (d < 32) {
      next[i] = d;
      return next;
    }
    next[i] = 0;
  }
  return next; // wrapped after 32^16 ids in one millisecond: not reachable in practice
}

const SESSION_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

/** Throws INVALID_SESSION_ID unless `id` is safe to use as one folder name on every platform. */
export function assertSessionId(id: unknown): asserts id is string {
  if (typeof id !== "string" || !SESSION_ID.test(id)) throw new InvalidSessionIdError(id);
}
