/**
 * What the Dockerfile generator knows of the repository it builds, passed in as data: the list of
 * its files and the text of the few files it reads. The langgraph CLI looks at the disk
 * (`exists()`, `is_dir()`, `os.listdir`, lock files, `package.json`); here the caller lists the
 * checkout once (`git ls-files`, or a walk of the clone) and the generator asks this index.
 *
 * Paths are relative to the repository root, with '/' separators and no '.' or '..' segments;
 * the root itself is "". Directories are those that hold a file, as in git.
 */

export interface SourceTree {
  /** Every file of the checkout, relative to the repository root: `apps/agent/langgraph.json`. */
  readonly files: Iterable<string>
  /**
   * The text of the files the generator reads, by path: the `package.json` files that
   * `filesToRead` names. A path missing here reads as an unreadable file.
   */
  readonly contents?: Readonly<Record<string, string>> | undefined
}

/** A normalised repository path's parent ("" for a top-level entry and for the root). */
export const parentOf = (path: string): string => {
  const slash = path.lastIndexOf("/")
  return slash === -1 ? "" : path.slice(0, slash)
}

/** The last segment of a normalised repository path; the root is called `rootName`. */
export const nameOf = (path: string, rootName: string): string => (path === "" ? rootName : path.slice(path.lastIndexOf("/") + 1))

/** `a/b` + `c` → `a/b/c`, with the root as "". */
export const joinPath = (dir: string, name: string): string => (dir === "" ? name : `${dir}/${name}`)

/**
 * `(dir / relative).resolve()` inside the repository: the normalised path, or undefined when
 * it is absolute or climbs above the root (it names nothing in the repository).
 */
export const resolveIn = (dir: string, relative: string): string | undefined => {
  if (relative.startsWith("/")) return undefined
  const segments = dir === "" ? [] : dir.split("/")
  for (const segment of relative.split("/")) {
    if (segment === "" || segment === ".") continue
    if (segment === "..") {
      if (segments.length === 0) return undefined
      segments.pop()
    } else segments.push(segment)
  }
  return segments.join("/")
}

/** Whether `path` is `ancestor` or below it (pathlib's `is_relative_to` on normalised paths). */
export const isWithin = (path: string, ancestor: string): boolean => ancestor === "" || path === ancestor || path.startsWith(`${ancestor}/`)

/** `path` relative to `ancestor` (which contains it); "" when they are the same. */
export const relativeTo = (path: string, ancestor: string): string => (ancestor === "" ? path : path === ancestor ? "" : path.slice(ancestor.length + 1))

/** The index the generator queries: which paths are files, which directories, what each directory holds. */
export class TreeIndex {
  private readonly fileSet = new Set<string>()
  private readonly entries = new Map<string, Set<string>>([["", new Set()]])
  private readonly contents: Readonly<Record<string, string>>

  constructor(tree: SourceTree) {
    this.contents = tree.contents ?? {}
    for (const raw of tree.files) {
      const file = resolveIn("", raw)
      if (file === undefined || file === "") continue
      this.fileSet.add(file)
      // Link the file into each ancestor up to the first that already lists the entry (its own ancestors do too).
      let child = file
      while (child !== "") {
        const parent = parentOf(child)
        let names = this.entries.get(parent)
        if (!names) {
          names = new Set()
          this.entries.set(parent, names)
        }
        const name = nameOf(child, "")
        if (names.has(name)) break
        names.add(name)
        child = parent
      }
    }
  }

  isFile(path: string): boolean {
    return this.fileSet.has(path)
  }

  isDirectory(path: string): boolean {
    return this.entries.has(path)
  }

  exists(path: string): boolean {
    return this.isFile(path) || this.isDirectory(path)
  }

  /** The names a directory holds (files and directories), sorted; empty for anything else. */
  list(path: string): Array<string> {
    return [...(this.entries.get(path) ?? [])].sort()
  }

  /**
   * The `package.json` of a directory: absent, not JSON, or parsed. A listed file whose text the
   * caller did not supply is the caller's bug (`filesToRead` names the files) and throws.
   */
  packageJson(dir: string): PackageJson {
    const path = joinPath(dir, "package.json")
    if (!this.isFile(path)) return { state: "absent", path }
    const text = this.contents[path]
    if (text === undefined) throw new Error(`The text of ${path} was not supplied (filesToRead names it)`)
    try {
      return { state: "parsed", path, value: JSON.parse(text) as unknown }
    } catch {
      return { state: "invalid", path }
    }
  }
}

export type PackageJson =
  | { readonly state: "absent"; readonly path: string }
  | { readonly state: "invalid"; readonly path: string }
  | { readonly state: "parsed"; readonly path: string; readonly value: unknown }
