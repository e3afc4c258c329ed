// Node's two HTTP clients for it_clients.c, inside a job, with nothing
// set by the job: fetch() (undici) and https.get. Node 20 reads no proxy
// variable, so both resolve the name through the job's resolver and the
// launcher's capture carries them to the proxy. "connect" is what a
// proxy agent does by hand: http.request's CONNECT to the job's relay
// with Node's default Host (the relay's own address), then TLS inside.
// Prints "node-WAY URL STATUS" or "node-WAY URL error CODE".
//
//   node node.js fetch|get|connect URL...
'use strict';
const http = require('http');
const https = require('https');
const tls = require('tls');
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

function viaConnect(url) {
	const u = new URL(url);
	const port = u.port || '443';
	return new Promise((resolve) => {
		const req = http.request({ host: '127.0.0.1', port: 3128,
			method: 'CONNECT', path: u.hostname + ':' + port });
		req.on('connect', (res, socket) => {
			if (res.statusCode !== 200) {
				socket.destroy();
				resolve('connect ' + res.statusCode);
				return;
			}
			https.get({ host: u.hostname, port: port, path: u.pathname,
				agent: false,
				createConnection: () => tls.connect({ socket: socket,
					servername: u.hostname }) }, (r) => {
				r.resume();
				r.on('end', () => resolve(String(r.statusCode)));
			}).on('error', (e) => resolve('error ' + e.code));
		});
		req.on('error', (e) => resolve('error ' + e.code));
		req.end();
	});
}

(async () => {
	for (const url of urls) {
		const what = way === 'fetch' ? await viaFetch(url)
			: way === 'connect' ? await viaConnect(url) : await get(url);
		console.log('node-' + way + ' ' + url + ' ' + what);
	}
	process.exit(0);
})();
