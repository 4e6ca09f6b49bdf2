/** Settings a test file puts in `process.env` (the runtimes read theirs there): `setEnv` answers the function that restores them. */
export const setEnv = (values: Readonly<Record<string, string>>): (() => void) => {
  const saved = Object.fromEntries(Object.keys(values).map((key) => [key, process.env[key]]))
  Object.assign(process.env, values)
  return () => {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key]
      else process.env[key] = value
    }
  }
}
