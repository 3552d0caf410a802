import type { LockedSession } from "../../backend/types.js";
import { markBlobsInFlight } from "../../blobs/in-flight.js";

// A batch goes to the backend once it holds this many blobs or bytes: few enough that the memory held meanwhile
// stays small, many enough that the backend's cost per call (the fs pack's look at its segments, a PostgreSQL
// round trip) is spread thin.
const BATCH_BLOBS = 512;
const BATCH_BYTES = 4 * 1024 * 1024;

/**
 * Stores the blobs of one scan without fsync: gathered into batches for the backend's `writeScanBlobs` (the fs
 * backend packs the small ones), else its `writeBlobs`, else one `writeBlob` each. Batches are written one after
 * another; each hash written is pushed onto `written` as its batch lands, so a scan that fails deletes exactly
 * what it stored (docs/ARCHITECTURE.md, "Workspace index").
 */
export class ScanBlobs {
  private pending = new Map<string, Uint8Array>();
  private pendingBytes = 0;
  private landed: Promise<void> = Promise.resolve();
  /** A batch that failed (a full disk, a lost lock): nothing is written after it. */
  private failed: { error: unknown } | undefined;

  constructor(
    private readonly locked: LockedSession,
    private readonly written: string[],
  ) {}

  /** Queues a blob; resolves once a batch it filled has landed (so a full disk stops the scan there). */
  async add(hash: string, bytes: Uint8Array): Promise<void> {
    const { locked } = this;
    if (!locked.writeScanBlobs && !locked.writeBlobs) {
      await markBlobsInFlight(locked);
      if (await locked.writeBlob(hash, bytes, { durable: false })) this.written.push(hash);
      return;
    }
    if (this.pending.has(hash)) return;
    this.pending.set(hash, bytes);
    this.pendingBytes += bytes.length;
    if (this.pending.size >= BATCH_BLOBS || this.pendingBytes >= BATCH_BYTES) await this.flush();
  }

  /** Writes what is queued, after the batches before it; resolves when all of them have landed. */
  async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = new Map();
    this.pendingBytes = 0;
    const landed = this.landed.then(() => this.write(batch));
    this.landed = landed.catch(() => undefined); // the failure reaches the caller below, once
    await landed;
  }

  private async write(batch: ReadonlyMap<string, Uint8Array>): Promise<void> {
    if (this.failed) throw this.failed.error;
    if (batch.size === 0) return;
    const { locked } = this;
    try {
      await markBlobsInFlight(locked);
      const wrote = locked.writeScanBlobs
        ? await locked.writeScanBlobs(batch)
        : await locked.writeBlobs!(batch, { durable: false });
      this.written.push(...wrote);
    } catch (error) {
      this.failed = { error };
      throw error;
    }
  }
}
