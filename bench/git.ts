import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * The peers' checkpoint store (Gemini CLI, Cline, Roo Code): a shadow git repository whose
 * GIT_DIR lives outside the project and whose work tree is the project. Real git, one child
 * process per command, as their simple-git wrappers spawn.
 */
export class ShadowGit {
  private readonly env: NodeJS.ProcessEnv;

  private constructor(
    readonly gitDir: string,
    readonly workTree: string,
  ) {
    this.env = {
      PATH: process.env.PATH,
      GIT_DIR: gitDir,
      GIT_WORK_TREE: workTree,
      // The host's ~/.gitconfig and /etc/gitconfig must not change what is measured (hooks, signing, fsmonitor).
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      LC_ALL: "C",
    };
  }

  /**
   * `git init` with the identity set in the shadow repo's own config, then the initial commit of
   * the whole tree (untimed setup). Auto-gc is off so a background repack never lands inside a
   * timed round. After a pause, a `git status` rewrites the index with an mtime later than every
   * file: otherwise entries written in the same second are "racily clean" and git re-hashes them
   * on every command, which would overcharge git.
   */
  static async create(gitDir: string, workTree: string): Promise<{ git: ShadowGit; initialCommit: string }> {
    const git = new ShadowGit(gitDir, workTree);
    await git.run(["init", "-q"]);
    for (const [key, value] of [
      ["user.name", "agent-tape bench"],
      ["user.email", "bench@agent-tape.invalid"],
      ["commit.gpgsign", "false"],
      ["gc.auto", "0"],
    ] as const)
      await git.run(["config", key, value]);
    await git.checkpoint();
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await git.run(["status", "--porcelain"]);
    return { git, initialCommit: await git.head() };
  }

  /** What the peers do before a tool runs: stage everything, commit (empty allowed, as they pass it). */
  async checkpoint(): Promise<void> {
    await this.run(["add", "-A"]);
    await this.run(["commit", "-q", "--allow-empty", "-m", "checkpoint"]);
  }

  /** Gemini CLI's restore: the work tree from the commit, then untracked files and folders removed. */
  async restore(commit: string): Promise<void> {
    await this.run(["restore", `--source=${commit}`, "."]);
    await this.run(["clean", "-f", "-d", "-q"]);
  }

  async head(): Promise<string> {
    return (await this.run(["rev-parse", "HEAD"])).trim();
  }

  /** Paths that differ from the commit, tracked or not: empty when the tree matches it exactly. */
  async changedSince(commit: string): Promise<string> {
    const tracked = await this.run(["diff", "--name-only", commit]);
    const untracked = await this.run(["ls-files", "--others", "--exclude-standard"]);
    return (tracked + untracked).trim();
  }

  /**
   * Paths where the work tree differs from the commit, whatever the index holds: the tree staged into a
   * throw-away index, compared with the commit (a file the index lacks is no blind spot, as it is for `diff`).
   */
  async treeDiffers(commit: string): Promise<string> {
    const env = { GIT_INDEX_FILE: `${this.gitDir}/bench-check-index` };
    await this.run(["read-tree", commit], env);
    await this.run(["add", "-A"], env);
    return (await this.run(["diff", "--cached", "--name-only", commit], env)).trim();
  }

  async run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
    const { stdout } = await run("git", args, {
      cwd: this.workTree,
      env: { ...this.env, ...env },
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  }
}
