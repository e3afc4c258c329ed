/*
 * The TLS of tls.h over OpenSSL and libevent's bufferevent_openssl. The
 * servername callback finds its tunnel's struct tls_sni through the SSL's
 * ex data; it refuses the handshake when the SNI is missing or names
 * another host than the CONNECT did.
 */
#include "tls.h"

#include "log.h"
#include "proxy.h"

#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

static int sni_index = -1;

static int
on_servername(SSL *ssl, int *alert, void *arg)
{
	struct tls_sni *s = SSL_get_ex_data(ssl, sni_index);
	const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	char norm[EGRESS_HOST_MAX + 1];

	(void)arg;
	if (s == NULL)
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	if (name == NULL) {
		s->problem = "no_sni";
	} else {
		snprintf(s->got, sizeof(s->got), "%s", name);
		if (egress_host_normalise(name, strlen(name), norm) < 0 ||
		    strcmp(norm, s->want) != 0)
			s->problem = "sni_differs";
	}
	if (s->problem != NULL) {
		*alert = SSL_AD_UNRECOGNIZED_NAME;
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	}
	return SSL_TLSEXT_ERR_OK;
}

struct bufferevent *
tls_mitm(struct proxy *p, struct bufferevent *under, struct job_ca *ca,
    const char *host, struct tls_sni *sni, const char **ret_why)
{
	X509 *cert;
	EVP_PKEY *key;
	SSL *ssl;
	struct bufferevent *f;

	if (ca == NULL || ca_leaf(ca, host, &cert, &key) < 0) {
		*ret_why = "no_leaf";
		return NULL;
	}
	ssl = SSL_new(p->mitm_ctx);
	if (ssl == NULL || SSL_use_certificate(ssl, cert) != 1 ||
	    SSL_use_PrivateKey(ssl, key) != 1) {
		SSL_free(ssl);
		*ret_why = "ssl_failed";
		return NULL;
	}
	SSL_set_ex_data(ssl, sni_index, sni);
	/* Deferred: a filter runs its read and event callbacks from inside
	 * the caller's own calls (an enable, a drain of its input below the
	 * high watermark), so conn.c's pump would run again inside itself,
	 * or free the connection under itself (it_uafaudit). */
	f = bufferevent_openssl_filter_new(p->base, under, ssl,
	    BUFFEREVENT_SSL_ACCEPTING,
	    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (f == NULL) {
		SSL_free(ssl);
		*ret_why = "ssl_failed";
		return NULL;
	}
	bufferevent_openssl_set_allow_dirty_shutdown(f, 1);
	/* Requests are small: a small read keeps an idle tunnel small (the
	 * filter reserves room for a whole read before it has the bytes). */
	bufferevent_set_max_single_read(f, 4096);
	return f;
}

struct bufferevent *
tls_upstream(struct proxy *p, const char *host)
{
	SSL *ssl = SSL_new(p->up_ctx);
	struct bufferevent *up;

	if (ssl == NULL || SSL_set_tlsext_host_name(ssl, host) != 1 ||
	    SSL_set1_host(ssl, host) != 1) {
		SSL_free(ssl);
		return NULL;
	}
	up = bufferevent_openssl_socket_new(p->base, -1, ssl,
	    BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
	if (up == NULL) {
		SSL_free(ssl);
		return NULL;
	}
	bufferevent_openssl_set_allow_dirty_shutdown(up, 1);
	return up;
}

const char *
tls_upstream_problem(struct bufferevent *bev)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);

	if (ssl != NULL && SSL_get_verify_result(ssl) != X509_V_OK)
		return "upstream_certificate";
	return "upstream_tls";
}

int
tls_init(struct proxy *p)
{
	sni_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
	p->mitm_ctx = SSL_CTX_new(TLS_server_method());
	p->up_ctx = SSL_CTX_new(TLS_client_method());
	if (sni_index < 0 || p->mitm_ctx == NULL || p->up_ctx == NULL)
		goto fail;
	SSL_CTX_set_min_proto_version(p->mitm_ctx, TLS1_2_VERSION);
	SSL_CTX_set_min_proto_version(p->up_ctx, TLS1_2_VERSION);
	SSL_CTX_set_tlsext_servername_callback(p->mitm_ctx, on_servername);
	/* No session resumption towards the job: each tunnel shows its SNI. */
	SSL_CTX_set_session_cache_mode(p->mitm_ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_options(p->mitm_ctx, SSL_OP_NO_TICKET);
	/* Idle tunnels keep no record buffers: 1,000 of them stay small. */
	SSL_CTX_set_mode(p->mitm_ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_mode(p->up_ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_verify(p->up_ctx, SSL_VERIFY_PEER, NULL);
	/* No read-ahead upstream: with it OpenSSL takes every record the
	 * socket holds in one read, while libevent's socket bufferevent
	 * reads on only as long as SSL_pending() (the current record)
	 * says, so an answer's second record (python's http.server writes
	 * the head and the body apart) waited in OpenSSL until the
	 * upstream sent more or closed (it_keepalive). Read record by
	 * record, what is not read stays in the socket and wakes the loop. */
	if (p->cfg.upstream_ca_file != NULL) {
		if (SSL_CTX_load_verify_locations(p->up_ctx,
			p->cfg.upstream_ca_file, NULL) != 1) {
			log_error("upstream_ca_failed", "{s:s}", "path",
			    p->cfg.upstream_ca_file);
			return -EIO;
		}
	} else if (SSL_CTX_set_default_verify_paths(p->up_ctx) != 1) {
		goto fail;
	}
	return 0;
fail:
	log_error("tls_init_failed", "{s:s}", "error",
	    ERR_reason_error_string(ERR_get_error()) ?: "unknown");
	return -EIO;
}
