// An inode number taken ahead on a helper thread travels as two halves of 32 bits in an array of doubles
// (stat-ahead.ts): the walk must tell it equal to the index's BigInt exactly, also past 2^53, where a double
// cannot hold it (NFS file ids, overlayfs inode numbers with the layer in the high bits).
import { expect, it } from "vitest";
import { sameInode } from "../../../src/checkpoint/workspace-index/stat-ahead.js";

const halves = (ino: bigint): [number, number] => [Number(ino >> 32n), Number(ino & 0xffffffffn)];

it("tells inode numbers equal or not, to the last bit, from small ones to 2^64 - 1", () => {
  const numbers = [0n, 1n, 350_952n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n];
  numbers.push(2n ** 63n + 12_345n, 2n ** 64n - 2n, 2n ** 64n - 1n);
  for (const ino of numbers) {
    expect(sameInode(ino, ...halves(ino)), `${ino}`).toBe(true);
    for (const other of [ino + 1n, ino - 1n, ino ^ (1n << 40n)].filter((n) => n >= 0n && n < 2n ** 64n))
      expect(sameInode(ino, ...halves(other)), `${ino} vs ${other}`).toBe(false);
  }
});
