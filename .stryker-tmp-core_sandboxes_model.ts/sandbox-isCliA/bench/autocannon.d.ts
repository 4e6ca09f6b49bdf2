/** autocannon ships no types; bench/load.ts uses only its programmatic entry point. */
// @ts-nocheck

declare module "autocannon" {
  const autocannon: (options: Record<string, unknown>) => Promise<any> & { on: (event: string, listener: (...args: Array<any>) => void) => void }
  export default autocannon
}
