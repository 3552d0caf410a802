import type { LockedSession } from "../../backend/types.js";
import { markBlobsInFlight } from "../../blobs/in-flight.js";

// A batch goes to the backend once it holds this many blobs or bytes: few enough that the memory held meanwhile
// stays small, many enough that the backend's cost per call (the fs pack's look at its segments, a PostgreSQL
// round trip) is spread thin.
const BATCH_BLOBS = 512;
const BATCH_BYTES = 4 * 1024 * 1024;
/** Batches on their way at once: the next is gathered while these land, and the memory held stays bounded. */
const MAX_LANDING = 2;

/**
 * Stores the blobs of one scan without fsync: gathered into batches for the backend's `writeScanBlobs` (the fs
 * backend packs the small ones), else its `writeBlobs`, else one `writeBlob` each. Batches are written one after
 * another while the scan reads on; each hash written is pushed onto `written` as its batch lands, so a scan that
 * fails deletes exactly what it stored (docs/ARCHITECTURE.md, "Workspace index").
 */
export class ScanBlobs {
  private pending = new Map<string, Uint8Array>();
  private pendingBytes = 0;
  /** The last batch started: each lands after the one before it. */
  private last: Promise<void> = Promise.resolve();
  /** Batches started and not yet waited for. */
  private landing: Promise<void>[] = [];
  /** A batch that failed (a full disk, a lost lock): nothing is written after it. */
  private failed: { error: unknown } | undefined;

  constructor(
    private readonly locked: LockedSession,
    private readonly written: string[],
  ) {}

  /**
   * Queues a blob. A full batch starts landing at once, after those before it, while the caller goes on: this
   * waits only when MAX_LANDING batches are already on their way, or when one of them failed (a full disk, a
   * lost lock: its error, here, so the scan stops).
   */
  async add(hash: string, bytes: Uint8Array): Promise<void> {
    const { locked } = this;
    if (!locked.writeScanBlobs && !locked.writeBlobs) {
      await markBlobsInFlight(locked);
      if (await locked.writeBlob(hash, bytes, { durable: false })) this.written.push(hash);
      return;
    }
    this.throwIfFailed();
    if (this.pending.has(hash)) return;
    this.pending.set(hash, bytes);
    this.pendingBytes += bytes.length;
    if (this.pending.size < BATCH_BLOBS && this.pendingBytes < BATCH_BYTES) return;
    this.startLanding();
    if (this.landing.length > MAX_LANDING) await this.landing.shift();
    this.throwIfFailed();
  }

  /** Writes what is queued, after the batches before it; resolves when all of them have landed. */
  async flush(): Promise<void> {
    this.startLanding();
    await Promise.all(this.landing.splice(0));
    this.throwIfFailed();
  }

  private throwIfFailed(): void {
    if (this.failed) throw this.failed.error;
  }

  private startLanding(): void {
    const batch = this.pending;
    this.pending = new Map();
    this.pendingBytes = 0;
    this.last = this.last
      .then(() => this.write(batch))
      .catch((error: unknown) => {
        this.failed ??= { error };
      });
    this.landing.push(this.last);
  }

  private async write(batch: ReadonlyMap<string, Uint8Array>): Promise<void> {
    if (this.failed || batch.size === 0) return;
    const { locked } = this;
    await markBlobsInFlight(locked);
    const wrote = locked.writeScanBlobs
      ? await locked.writeScanBlobs(batch)
      : await locked.writeBlobs!(batch, { durable: false });
    this.written.push(...wrote);
  }
}
