export async function writeGeneratedTables(_outDir: string): Promise<void> {}
