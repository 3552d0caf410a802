import { type AgentTapeErrorByCode, type AgentTapeErrorCode, isAgentTapeError } from "../../src/core/errors.js";

/**
 * The agent-tape error `pending` rejects with, narrowed by its code to its class (its own fields in reach
 * without a cast). Throws, failing the test, when it resolves or rejects with anything else.
 */
export async function expectRejection<C extends AgentTapeErrorCode>(
  pending: Promise<unknown> | (() => Promise<unknown>),
  code: C,
): Promise<AgentTapeErrorByCode[C]> {
  let error: unknown;
  try {
    await (typeof pending === "function" ? pending() : pending);
  } catch (caught) {
    error = caught;
  }
  if (isAgentTapeError(error, code)) return error;
  throw new Error(`expected ${code}, got: ${error === undefined ? "success" : String(error)}`, { cause: error });
}
