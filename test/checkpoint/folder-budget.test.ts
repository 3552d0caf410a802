import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  MAX_KEPT_FOLDERS,
  MIN_KEPT_FOLDERS,
  UNKNOWN_LIMIT_FOLDERS,
  keptFolderBudget,
} from "../../src/checkpoint/folder-budget.js";

/** /proc/self/limits as Linux writes it, with `soft` and `hard` for open files. */
const limits = (soft: string, hard: string) =>
  [
    "Limit                     Soft Limit           Hard Limit           Units     ",
    "Max cpu time              unlimited            unlimited            seconds   ",
    `Max open files            ${soft.padEnd(20)} ${hard.padEnd(20)} files     `,
    "Max locked memory         8388608              8388608              bytes     ",
  ].join("\n");

describe("how many folders an operation keeps open", () => {
  it("an eighth of the soft descriptor limit", () => {
    expect(keptFolderBudget(limits("20000", "20000"))).toBe(2500);
    expect(keptFolderBudget(limits("8192", "524288"))).toBe(1024);
    expect(keptFolderBudget(limits("1024", "4096"))).toBe(128);
    // A process allowed 200 keeps 25: a fixed 256 took every descriptor (test/rewind/few-descriptors.process.test.ts).
    expect(keptFolderBudget(limits("200", "200"))).toBe(25);
  });

  it("never fewer than 16, never more than 4,096", () => {
    expect(keptFolderBudget(limits("64", "64"))).toBe(MIN_KEPT_FOLDERS);
    expect(keptFolderBudget(limits("1048576", "1048576"))).toBe(MAX_KEPT_FOLDERS);
    expect(keptFolderBudget(limits("unlimited", "unlimited"))).toBe(MAX_KEPT_FOLDERS);
  });

  it("128 when the limit cannot be read", () => {
    expect(keptFolderBudget(undefined)).toBe(UNKNOWN_LIMIT_FOLDERS);
    expect(keptFolderBudget("")).toBe(UNKNOWN_LIMIT_FOLDERS);
    expect(keptFolderBudget(limits("lots", "lots"))).toBe(UNKNOWN_LIMIT_FOLDERS);
    expect(keptFolderBudget(limits("0", "0"))).toBe(UNKNOWN_LIMIT_FOLDERS);
  });

  it("reads this process's own limits", () => {
    const text = readFileSync("/proc/self/limits", "utf8");
    const soft = Number(/^Max open files\s+(\d+)/m.exec(text)?.[1]);
    expect(keptFolderBudget(text)).toBe(Math.min(MAX_KEPT_FOLDERS, Math.max(MIN_KEPT_FOLDERS, Math.floor(soft / 8))));
  });
});
