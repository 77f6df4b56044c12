/**
 * Stops an example that needs optional peers of lagent-ts when one is not installed, saying what to install
 * (rather than failing later, in some unrelated way, once a tool call meets the missing package).
 *
 * @example
 * await requirePeers('examples/deep-research', ['@mozilla/readability', 'linkedom']);
 */
export async function requirePeers(example: string, packages: readonly string[]): Promise<void> {
  for (const name of packages) {
    try {
      await import(name);
    } catch (error) {
      throw new Error(
        `${example} needs ${packages.join(' and ')}, optional peers of lagent-ts: npm install ${packages.join(' ')} (${name}: ${(error as Error).message})`,
        { cause: error },
      );
    }
  }
}
