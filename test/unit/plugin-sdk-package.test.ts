import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

const TYPED = `import { definePlugin } from 'platform/sdk';

export default definePlugin<{ greeting: string }>({
  setup(ctx) {
    ctx.routes.get('/hello/:name', (req) => ({ message: \`\${ctx.config.greeting}, \${req.params.name}\` }));
    ctx.logger.info('ready');
  },
});
`;

const TYPES_ONLY = `import type { PluginDefinition } from 'platform/sdk';

export default {
  async setup(ctx) {
    await ctx.storage.set('n', 1);
    ctx.health.report('healthy');
  },
} satisfies PluginDefinition;
`;

const JSDOC = `/** @type {import('platform/sdk').PluginDefinition<{ greeting: string }>} */
export default {
  setup(ctx) {
    ctx.routes.get('/hi', () => ({ hi: ctx.config.greeting }));
  },
};
`;

const WRONG = `import { definePlugin } from 'platform/sdk';

export default definePlugin({
  setup(ctx) {
    ctx.routes.gett('/typo', () => null);
  },
});
`;

/**
 * What a plugin author's project sees: the package as installed in its node_modules (the `exports` of our
 * package.json, the SDK's declarations where `npm run build` writes them), and the author's own TypeScript and
 * JSDoc-typed JavaScript checked against it with the module resolutions of Node and of bundlers.
 */
describe("the SDK as a plugin author's project imports it (`platform/sdk`)", () => {
  let project: string;
  let emitted: string[];

  beforeAll(() => {
    project = mkdtempSync(join(tmpdir(), 'plugin-author-'));
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
    const installed = join(project, 'node_modules', 'platform');
    mkdirSync(installed, { recursive: true });
    writeFileSync(
      join(installed, 'package.json'),
      JSON.stringify({
        name: pkg['name'],
        version: pkg['version'],
        type: pkg['type'],
        exports: pkg['exports'],
      }),
    );
    // The build's own options, with its output moved into the installed copy.
    const build = ts.getParsedCommandLineOfConfigFile(
      join(ROOT, 'tsconfig.build.json'),
      {},
      {
        ...ts.sys,
        onUnRecoverableConfigFileDiagnostic: (d) => {
          throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
        },
      },
    );
    if (!build) throw new Error('tsconfig.build.json could not be read');
    const outDir = join(installed, relative(ROOT, build.options.outDir ?? ROOT));
    emitted = [];
    const program = ts.createProgram([join(ROOT, 'src', 'plugins', 'sdk.ts')], {
      ...build.options,
      outDir,
      declaration: true,
      emitDeclarationOnly: true,
      sourceMap: false,
      declarationMap: false,
      types: [],
    });
    program.emit(undefined, (file, text) => {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, text);
      emitted.push(relative(installed, file));
    });
    mkdirSync(join(project, 'src'));
    writeFileSync(join(project, 'src', 'typed.ts'), TYPED);
    writeFileSync(join(project, 'src', 'types-only.ts'), TYPES_ONLY);
    writeFileSync(join(project, 'src', 'jsdoc.js'), JSDOC);
    writeFileSync(join(project, 'src', 'wrong.ts'), WRONG);
  });
  afterAll(() => rmSync(project, { recursive: true, force: true }));

  const check = (files: string[], resolution: 'NodeNext' | 'Bundler') => {
    const options: ts.CompilerOptions = {
      strict: true,
      noEmit: true,
      allowJs: true,
      checkJs: true,
      // The standard library is not ours to check (and checking it is slow); the SDK's types still resolve.
      skipLibCheck: true,
      types: [],
      target: ts.ScriptTarget.ES2022,
      ...(resolution === 'NodeNext'
        ? { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext }
        : { module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler }),
    };
    // The author's package.json says ESM, as the docs' example does.
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'greeter', type: 'module' }));
    const program = ts.createProgram(
      files.map((f) => join(project, 'src', f)),
      options,
    );
    return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  };

  it('emits self-contained declarations where the package exports them', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      exports: Record<string, { types: string; default: string }>;
    };
    const sdk = pkg.exports['./sdk'];
    expect(sdk).toBeDefined();
    // Only the SDK's own file: it imports nothing else of the platform.
    expect(emitted).toEqual([sdk!.types.replace(/^\.\//, '')]);
    expect(existsSync(join(project, 'node_modules', 'platform', sdk!.types))).toBe(true);
    expect(sdk!.default.replace(/\.js$/, '.d.ts')).toBe(sdk!.types);
  });

  for (const resolution of ['NodeNext', 'Bundler'] as const) {
    it(`type-checks definePlugin, type-only and JSDoc plugins, and catches a mistake (${resolution} resolution)`, () => {
      expect(check(['typed.ts', 'types-only.ts', 'jsdoc.js', 'wrong.ts'], resolution)).toEqual([
        expect.stringMatching(/Property 'gett' does not exist on type 'PluginRoutes'/),
      ]);
    });
  }
});
