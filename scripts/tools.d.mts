/** Types of scripts/tools.mjs, the maintainers' tools installed on demand in tools/. */
export declare const TOOLS_DIR: string;
/** Installs tools/ from its lockfile unless that exact lockfile is installed already. */
export declare function ensureTools(): void;
/** `require` that resolves from tools/ (after installing it when needed). */
export declare function toolRequire(): NodeJS.Require;
/** Dynamic `import()` of a tool's package, resolved from tools/. */
export declare function importTool<T = unknown>(specifier: string): Promise<T>;
/** The path of a tool's executable in tools/node_modules/.bin. */
export declare function toolBin(name: string): string;
