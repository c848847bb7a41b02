// The peer in the benchmark: sitemap.js (npm `sitemap`) SitemapAndIndexStream with gzip.
// Reads a TSV of already-normalized, deduplicated URLs (loc \t lastmod) and writes gzipped 50k shards
// plus an index into the output folder. Usage: node sitemapjs.mjs URLS.tsv OUT_DIR
import { createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { createGzip } from 'node:zlib';
import { createRequire } from 'node:module';

const require = createRequire(resolve(process.cwd(), 'package.json'));
const { SitemapAndIndexStream, SitemapStream } = require('sitemap');

const [input, out] = process.argv.slice(2);
const base = 'https://www.example.com/';
const index = new SitemapAndIndexStream({
  limit: 50000,
  getSitemapStream: (i) => {
    const stream = new SitemapStream({ hostname: base });
    const name = `sitemap-${i}.xml.gz`;
    const ws = stream.pipe(createGzip()).pipe(createWriteStream(resolve(out, name)));
    return [new URL(name, base).toString(), stream, ws];
  },
});
const done = once(index.pipe(createGzip()).pipe(createWriteStream(resolve(out, 'sitemap-index.xml.gz'))), 'finish');
let count = 0;
for await (const line of createInterface({ input: createReadStream(input) })) {
  const [url, lastmod] = line.split('\t');
  if (!index.write(lastmod ? { url, lastmod } : { url })) await once(index, 'drain');
  count += 1;
}
index.end();
await done;
console.log(JSON.stringify({ urls: count }));
