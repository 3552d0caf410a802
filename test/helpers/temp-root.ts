import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Temp folders made by a test file, removed together by `removeAll` (call it in afterEach). */
export class TempRoots {
  private readonly made: string[] = [];

  async make(prefix = "agent-tape-"): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), prefix));
    this.made.push(dir);
    return dir;
  }

  async removeAll(): Promise<void> {
    const dirs = this.made.splice(0);
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  }
}
