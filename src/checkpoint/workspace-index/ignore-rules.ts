import ignore, { type Ignore } from "ignore";

/** The folder name git keeps its own store under: never part of the workspace, at any depth. */
const GIT_DIR = ".git";

/** One `.gitignore` (or the caller's patterns), with the folder its patterns are relative to. */
interface Matcher {
  /** Workspace-relative folder, "" for the workspace itself. */
  base: string;
  rules: Ignore;
}

/**
 * Which paths a workspace scan leaves out, the way git decides it: `.git` always, the caller's
 * own patterns, and every `.gitignore` from the workspace down, a deeper file overriding a
 * shallower one (a `!negation` there re-includes). Matching is done by the `ignore` package
 * rather than a hand-written gitignore parser. A folder that is ignored is not entered, so, as in
 * git, nothing below it can be re-included.
 */
export class IgnoreRules {
  private readonly own: Matcher | undefined;
  private readonly alwaysOut: ReadonlySet<string>;

  /**
   * @param patterns the caller's gitignore-style patterns, relative to the workspace; they are
   * checked before any `.gitignore`, so the caller has the last word.
   * @param alwaysOut workspace-relative paths never scanned (the session store, when it lies inside).
   */
  constructor(patterns: readonly string[] = [], alwaysOut: Iterable<string> = []) {
    this.own = patterns.length > 0 ? { base: "", rules: ignore().add([...patterns]) } : undefined;
    this.alwaysOut = new Set(alwaysOut);
  }

  /** The rules in force inside folder `base`: those of its parent plus its own `.gitignore`, if any. */
  inside(parent: Scope, base: string, gitignoreText: string | undefined): Scope {
    if (gitignoreText === undefined) return parent;
    return [...parent, { base, rules: ignore().add(gitignoreText) }];
  }

  /** The scope of the workspace root, before its own `.gitignore` is read. */
  root(): Scope {
    return [];
  }

  /** True for the library's own folders (the session store, the watcher's barrier) when they lie inside. */
  isOwn(path: string): boolean {
    return this.alwaysOut.has(path);
  }

  /** True when `path` (workspace-relative, `/`-separated) is left out of the scan. */
  ignores(scope: Scope, path: string, name: string, isDirectory: boolean): boolean {
    if (name === GIT_DIR || this.alwaysOut.has(path)) return true;
    if (this.own === undefined && scope.length === 0) return false;
    const asTested = isDirectory ? `${path}/` : path;
    if (this.own) {
      const verdict = this.own.rules.test(asTested);
      if (verdict.ignored) return true;
      if (verdict.unignored) return false;
    }
    // Deepest .gitignore first: the first one with an opinion decides, as in git.
    for (let i = scope.length - 1; i >= 0; i--) {
      const { base, rules } = scope[i]!;
      const verdict = rules.test(base === "" ? asTested : asTested.slice(base.length + 1));
      if (verdict.ignored) return true;
      if (verdict.unignored) return false;
    }
    return false;
  }
}

/** The `.gitignore` files in force in one folder, shallowest first. */
export type Scope = readonly Matcher[];
