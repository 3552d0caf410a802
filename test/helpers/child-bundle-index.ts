import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

// What test/setup/child-bundles.ts leaves beside the bundles it builds, and test/helpers/children.ts reads to
// refuse a stale one: when they were built, and from which files with which contents.

const repository = fileURLToPath(new URL("../..", import.meta.url));

export const BUNDLE_INDEX = "index.json";

export interface BundleIndex {
  builtAtMs: number;
  /** Per bundle (its path in the folder), the repository files it was built from. */
  inputs: Record<string, string[]>;
  /** Per repository file, the SHA-256 of what was built: a file touched since but unchanged is not stale. */
  digests: Record<string, string>;
}

/** The SHA-256 of a repository file (a path from the repository's root). */
export function digest(file: string): string {
  return createHash("sha256")
    .update(readFileSync(join(repository, file)))
    .digest("hex");
}

declare module "vitest" {
  interface ProvidedContext {
    /** The folder of this run's child bundles (test/setup/child-bundles.ts). */
    childBundles: string;
  }
}
