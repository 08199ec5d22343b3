/**
 * What `/console` answers when the console was never built. It names no file-system path: the page is
 * public, and where the platform is installed is none of an anonymous visitor's business.
 */
export function notBuiltPage(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Console not built</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; padding: 0 1rem">
<h1>The admin console is not built</h1>
<p>This installation has no built console. In the platform's folder run</p>
<pre>npm run build:console</pre>
<p>(<code>npm run build</code> and <code>npm start</code> build it too), then reload this page.
The HTTP API works without it: see <a href="/docs">/docs</a>.</p>
</body></html>
`;
}
