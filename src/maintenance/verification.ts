// One run of `verify` (verify.ts): what it found so far, and what each event of the tape or an archive tells it.
import type { StorageBackend } from "../backend/types.js";
import type { StoredEvent } from "../core/events.js";
import { builtinPayloadProblem } from "../core/payload-check.js";
import { referencedBlobs, snapshotsIn } from "../blobs/references.js";
import { type HorizonMark, isDroppedCheckpoint } from "../blobs/retention-horizon.js";
import { workspaceRecordedBy } from "../checkpoint/recorded-workspace.js";
import { undoMarkerProblem } from "./undo-marker.js";
import {
  VERIFY_NEVER_CHECKS,
  type BlobReference,
  type VerifyOptions,
  type VerifyProblem,
  type VerifyProgress,
  type VerifyReport,
} from "./verify-report.js";

export class Verification {
  readonly signal: AbortSignal | undefined;
  readonly onProgress: VerifyOptions["onProgress"];
  readonly problems: VerifyProblem[] = [];
  readonly notChecked: string[] = [...VERIFY_NEVER_CHECKS];
  readonly progress: VerifyProgress = { eventsRead: 0, blobsChecked: 0, blobsToCheck: 0 };
  /** Checkpoints through it were dropped by retention: their blobs are gone on purpose. */
  horizon: HorizonMark = { through: 0 };
  /** Each blob named, with the first event (or archive line) that names it. */
  readonly firstReference = new Map<string, BlobReference>();
  /** The length the first snapshot naming a blob recorded: the blob is hashed up to it and one byte more. */
  readonly recordedBytes = new Map<string, number>();
  readonly recordedWorkspaces = new Set<string>();

  constructor(
    readonly backend: StorageBackend,
    readonly sessionId: string,
    options: VerifyOptions,
  ) {
    this.signal = options.signal;
    this.onProgress = options.onProgress;
  }

  inconsistentMarker(sequence: number, reason: string, archive?: string): void {
    const where = archive === undefined ? "" : ` in ${archive}`;
    this.problems.push({
      kind: "marker_inconsistent",
      sequence,
      reason,
      ...(archive === undefined ? {} : { archive }),
      message: `undo marker #${sequence}${where} does not agree with the tape: ${reason}`,
    });
  }

  /** Checks one event's payload and notes the blobs it names; false when its payload is unsound. */
  note(event: StoredEvent, archive?: string): boolean {
    const reason = builtinPayloadProblem(event);
    if (reason !== undefined) {
      const where = archive === undefined ? "" : ` in ${archive}`;
      this.problems.push({
        kind: "payload_invalid",
        sequence: event.sequence,
        type: event.type,
        reason,
        ...(archive === undefined ? {} : { archive }),
        message: `event #${event.sequence}${where} (${event.type}) does not fit its schema: ${reason}`,
      });
      return false;
    }
    let sound = true;
    const inconsistent = undoMarkerProblem(event);
    if (inconsistent !== undefined) {
      this.inconsistentMarker(event.sequence, inconsistent, archive);
      sound = false;
    }
    if (archive === undefined) {
      const workspace = workspaceRecordedBy(event);
      if (workspace !== undefined) this.recordedWorkspaces.add(workspace);
    }
    if (!isDroppedCheckpoint(event, this.horizon)) this.noteBlobs(event, archive);
    return sound;
  }

  private noteBlobs(event: StoredEvent, archive: string | undefined): void {
    const hashes = referencedBlobs([event]);
    const where = archive === undefined ? {} : { archive };
    for (const file of snapshotsIn(event)) {
      if (file.kind !== "blob" || !hashes.has(file.blob) || this.firstReference.has(file.blob)) continue;
      this.firstReference.set(file.blob, { sequence: event.sequence, type: event.type, path: file.path, ...where });
      this.recordedBytes.set(file.blob, file.bytes);
    }
    for (const hash of hashes)
      if (!this.firstReference.has(hash))
        this.firstReference.set(hash, { sequence: event.sequence, type: event.type, ...where });
  }

  report(): VerifyReport {
    return {
      sessionId: this.sessionId,
      ok: this.problems.length === 0,
      events: this.progress.eventsRead,
      blobsChecked: this.firstReference.size,
      problems: this.problems,
      notChecked: this.notChecked,
    };
  }
}
