// The JVM's HTTPS clients for it_jvm.c, inside a job, with nothing set by
// the job: no -Djavax.net.ssl.trustStore, no JAVA_TOOL_OPTIONS, no proxy
// property. Java trusts the job's CA through the store the launcher
// wrote (/etc/ssl/certs/java/cacerts) and, reading no HTTPS_PROXY, goes
// direct: the job's resolver and the launcher's capture carry it to the
// proxy. Run as a single-file source (Java 11+):
//
//   java Client.java URL...
//
// Prints, for each URL, the proxy Java chose ("jvm-proxy URL DIRECT"),
// then "jvm-http URL STATUS DENY-HEADER BODY" (java.net.http.HttpClient)
// and "jvm-url URL STATUS" (HttpsURLConnection), or "... URL error
// EXCEPTION-CLASS".
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.Proxy;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

public class Client {
	public static void main(String[] args) {
		HttpClient client = HttpClient.newBuilder()
		    .connectTimeout(Duration.ofSeconds(20)).build();
		for (String url : args) {
			URI uri = URI.create(url);
			List<Proxy> chosen = ProxySelector.getDefault().select(uri);
			System.out.println("jvm-proxy " + url + " " +
			    (chosen.isEmpty() ? "none" : chosen.get(0).toString()));
			try {
				HttpResponse<String> r = client.send(
				    HttpRequest.newBuilder(uri)
					.timeout(Duration.ofSeconds(30)).build(),
				    HttpResponse.BodyHandlers.ofString());
				System.out.println("jvm-http " + url + " " +
				    r.statusCode() + " " +
				    r.headers().firstValue("X-Cordon-Deny")
					.orElse("-") + " " +
				    r.body().strip());
			} catch (Exception e) {
				System.out.println("jvm-http " + url + " error " +
				    e.getClass().getName());
			}
			try {
				HttpURLConnection c =
				    (HttpURLConnection)uri.toURL().openConnection();
				c.setConnectTimeout(20000);
				c.setReadTimeout(30000);
				int status = c.getResponseCode();
				InputStream in = status < 400 ? c.getInputStream()
							      : c.getErrorStream();
				if (in != null)
					in.readAllBytes();
				System.out.println("jvm-url " + url + " " + status);
			} catch (Exception e) {
				System.out.println("jvm-url " + url + " error " +
				    e.getClass().getName());
			}
		}
	}
}
