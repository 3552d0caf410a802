// Maintenance: how gc and verify describe an error they report instead of throwing.
import { isAgentTapeError } from "../core/errors.js";

/** An error, reported rather than thrown: agent-tape's stable code (or the system's, e.g. EACCES) and message. */
export interface ErrorSummary {
  code: string;
  message: string;
}

export function summarizeError(error: unknown): ErrorSummary {
  if (isAgentTapeError(error)) return { code: error.code, message: error.message };
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return {
    code: typeof code === "string" ? code : "ERROR",
    message: error instanceof Error ? error.message : String(error),
  };
}
