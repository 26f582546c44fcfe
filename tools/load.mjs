/**
 * `import()` from here resolves bare names in tools/node_modules, with the ES module conditions a
 * package declares (scripts/tools.mjs `importTool` calls it after installing the tools).
 */
export const load = (specifier) => import(specifier);
