// Node's two HTTP clients for it_clients.c, inside a job, with nothing
// set by the job: fetch() (undici) and https.get. Node 20 reads no proxy
// variable, so both resolve the name through the job's resolver and the
// launcher's capture carries them to the proxy. Prints "node-WAY URL
// STATUS" or "node-WAY URL error CODE".
//
//   node node.js fetch|get URL...
'use strict';
const https = require('https');
const way = process.argv[2];
const urls = process.argv.slice(3);

function get(url) {
	return new Promise((resolve) => {
		https.get(url, (r) => {
			r.resume();
			r.on('end', () => resolve(String(r.statusCode)));
		}).on('error', (e) => resolve('error ' + e.code));
	});
}

function viaFetch(url) {
	return fetch(url).then((r) => r.text().then(() => String(r.status)),
		(e) => 'error ' + (e.cause ? e.cause.code : e.message));
}

(async () => {
	for (const url of urls) {
		const what = way === 'fetch' ? await viaFetch(url) : await get(url);
		console.log('node-' + way + ' ' + url + ' ' + what);
	}
	process.exit(0);
})();
