import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { MAX_KEPT_FOLDERS, MIN_KEPT_FOLDERS, keptFolderBudget } from "../../src/checkpoint/folder-budget.js";

/** /proc/self/limits as Linux writes it, with `soft` and `hard` for open files. */
const limits = (soft: string, hard: string) =>
  [
    "Limit                     Soft Limit           Hard Limit           Units     ",
    "Max cpu time              unlimited            unlimited            seconds   ",
    `Max open files            ${soft.padEnd(20)} ${hard.padEnd(20)} files     `,
    "Max locked memory         8388608              8388608              bytes     ",
  ].join("\n");

describe("how many folders an operation keeps open", () => {
  it("a sixteenth of the soft descriptor limit", () => {
    expect(keptFolderBudget(limits("20000", "20000"))).toBe(1250);
    expect(keptFolderBudget(limits("8192", "524288"))).toBe(512);
  });

  it("never fewer than 256, never more than 4,096", () => {
    expect(keptFolderBudget(limits("1024", "4096"))).toBe(MIN_KEPT_FOLDERS);
    expect(keptFolderBudget(limits("1048576", "1048576"))).toBe(MAX_KEPT_FOLDERS);
    expect(keptFolderBudget(limits("unlimited", "unlimited"))).toBe(MAX_KEPT_FOLDERS);
  });

  it("256 when the limit cannot be read", () => {
    expect(keptFolderBudget(undefined)).toBe(MIN_KEPT_FOLDERS);
    expect(keptFolderBudget("")).toBe(MIN_KEPT_FOLDERS);
    expect(keptFolderBudget(limits("lots", "lots"))).toBe(MIN_KEPT_FOLDERS);
    expect(keptFolderBudget(limits("0", "0"))).toBe(MIN_KEPT_FOLDERS);
  });

  it("reads this process's own limits", () => {
    const text = readFileSync("/proc/self/limits", "utf8");
    const soft = Number(/^Max open files\s+(\d+)/m.exec(text)?.[1]);
    expect(keptFolderBudget(text)).toBe(Math.min(MAX_KEPT_FOLDERS, Math.max(MIN_KEPT_FOLDERS, Math.floor(soft / 16))));
  });
});
