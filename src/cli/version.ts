/**
 * The package version `agent-tape --version` prints. A constant rather than a read of
 * package.json at run time: the CLI is bundled to ESM and CJS, and neither has a path to
 * package.json that works in both. test/cli keeps it equal to package.json's.
 */
export const VERSION = "0.1.0";
