/**
 * `install_command` and `build_command` of a JavaScript deployment (`source_config`, the CLI's
 * `--install-command` / `--build-command`). Each becomes a Dockerfile `RUN` line as written, so the
 * CLI refuses what could end that line or start another command (`has_disallowed_build_command_content`):
 * `"` `` ` `` `\` `|` `;` `$` `<` `>`, a lone `&` (`&&` is allowed), and line breaks, tabs and NUL.
 * Slipway refuses every other control character too (a superset of the CLI's list).
 */

/** The characters the CLI refuses anywhere in a command. */
export const disallowedCommandCharacters: ReadonlyArray<string> = ['"', "`", "\\", "|", ";", "$", ">", "<"]

/** A single `&` that is not part of `&&` (runs of three or more count too: `&&&` holds a lone one). */
const loneAmpersand = /(?<!&)&(?:&&)*(?!&)/
const controlCharacter = /[\u0000-\u001f\u007f]/

/** What the command holds that the CLI refuses, described for a message, or undefined when it is acceptable. */
const disallowedPart = (command: string): string | undefined => {
  const character = disallowedCommandCharacters.find((c) => command.includes(c))
  if (character !== undefined) return `'${character}'`
  if (controlCharacter.test(command)) return "a control character (such as a line break or a tab)"
  if (loneAmpersand.test(command)) return "a lone '&' (use '&&' to chain commands)"
  return undefined
}

/** Whether the CLI would refuse this command (`has_disallowed_build_command_content`, plus every control character). */
export const hasDisallowedCommandContent = (command: string): boolean => disallowedPart(command) !== undefined

/**
 * Why `install_command` or `build_command` is refused, or undefined. The first sentence is the
 * CLI's message; the rest says what was found.
 */
export const buildCommandProblem = (field: "install_command" | "build_command", command: string): string | undefined => {
  const part = disallowedPart(command)
  return part === undefined
    ? undefined
    : `${field} contains disallowed characters or patterns. It holds ${part}; a command may not contain " \` \\ | ; $ < >, a lone & or control characters.`
}
