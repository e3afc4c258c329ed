# it_launcher's tokens_are_short_and_egress_goes_through_the_proxy: a mint
# at the broker, one request the egress allows and one it denies, direct
# connections that must all fail (to the broker, the proxy, the upstream
# and the outside), then a request through the relay with a half-close.
# $1: the upstream's port, $2: the broker's base URL, $3: the proxy's.
port=$1
curl -s -X POST http://broker.cordon/v1/token \
    -d '{"capability":"x.read","params":{"t":"1"}}'
echo
echo allowed=$(curl -s -o /dev/null -w '%{http_code}' \
    "http://api.test:$port/ok/x")
echo denied=$(curl -s -o /dev/null -w '%{http_code}' \
    "http://api.test:$port/admin")
curl -s --noproxy '*' -m 2 -o /dev/null "$2/healthz"
echo broker=$?
curl -s --noproxy '*' -m 2 -o /dev/null "$3/healthz"
echo proxy=$?
curl -s --noproxy '*' -m 2 -o /dev/null "http://127.0.0.1:$port/"
echo upstream=$?
curl -s --noproxy '*' -m 2 -o /dev/null http://192.0.2.1/
echo outside=$?
python3 repo/half_close.py "$port"
