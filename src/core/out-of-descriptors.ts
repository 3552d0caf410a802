import { StorageFailedError } from "./errors.js";

/**
 * A process out of descriptors (EMFILE; ENFILE, the system's) cannot open what it could open a moment later: that is
 * its state, not the file's nor the folder's. Such an error is STORAGE_FAILED, thrown, where a capture or a scan
 * would record the file "unreadable" or keep a folder it could not list as it was: the tool's change would then lose
 * the file's before-state, or be missed (test/checkpoint/capture-few-descriptors.process.test.ts).
 */
export function throwIfOutOfDescriptors(error: unknown): void {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === "EMFILE" || code === "ENFILE") throw new StorageFailedError(error as NodeJS.ErrnoException);
}
