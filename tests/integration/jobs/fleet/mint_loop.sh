# A job on one host of a fleet (it_fleet_hosts): it holds a connection
# through the relay, which the host's proxy counts, and mints a token
# through broker.cordon every 0.3 s, printing each answer's status, until
# it is stopped.
/usr/bin/python3 -c '
import socket, time
s = socket.create_connection(("127.0.0.1", 3128))
time.sleep(300)
' &
i=0
while [ $i -lt 600 ]; do
	curl -s -o /dev/null -w 'MINT %{http_code}\n' -X POST \
	    http://broker.cordon/v1/token \
	    -d '{"capability":"x.read","params":{"t":"1"}}'
	sleep 0.3
	i=$((i + 1))
done
