import { constants } from "node:fs";
import { mkdir, open, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fsyncPath } from "../src/core/atomic-file.js";

/**
 * What a crash-safe rewind of one file must wait for at the least, done raw (docs/ARCHITECTURE.md, "Rewind
 * intent"): the intent written to a temp file, fsynced, renamed, its folder fsynced; the file's new bytes
 * written to a temp file and renamed over it, then the file and its folder fsynced at once; one line appended
 * through an O_DSYNC descriptor (the marker); the intent deleted. No plan, no confinement check, no log read:
 * the floor a rewind's other work sits on, measured in the same rounds. Returns the milliseconds it took.
 */
export async function durableRewindFloor(records: string, file: string, bytes: string): Promise<number> {
  await mkdir(records, { recursive: true });
  const started = performance.now();
  const intent = join(records, "intent.json");
  const temp = join(records, ".tmp-intent.json");
  const handle = await open(temp, "wx");
  await handle.writeFile("i".repeat(1200)); // a 1-file intent carrying its undo bytes is ~1-7 KB
  await handle.sync();
  await handle.close();
  await rename(temp, intent);
  await fsyncPath(records);
  const fileTemp = join(dirname(file), ".tmp-floor");
  await writeFile(fileTemp, bytes, { flag: "wx" });
  await rename(fileTemp, file);
  await Promise.all([fsyncPath(file), fsyncPath(dirname(file))]);
  const log = await open(
    join(records, "log"),
    constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_DSYNC,
  );
  await log.write("m".repeat(600)); // the marker's line
  await log.close();
  await rm(intent);
  return performance.now() - started;
}
