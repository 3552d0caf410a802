import { fileURLToPath } from "node:url";

/**
 * The Claude Agent SDK as .ci/run installs it, outside node_modules: its package brings the Claude Code binary
 * (about 400 MB), too much for a devDependency every clone and every git install would fetch.
 */
export const CLAUDE_SDK_ENTRY = fileURLToPath(
  new URL("../../.tools/claude-agent-sdk/node_modules/@anthropic-ai/claude-agent-sdk/sdk.mjs", import.meta.url),
);
