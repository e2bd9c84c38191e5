# docs/guide/env.sh: what every guide chapter needs, sourced from the checkout (`source docs/guide/env.sh`) in a
# terminal next to `make run`. It sets the broker's URL, a scratch directory, a dev token with broker:write and
# the helpers the chapters use; new_runtime provisions a runtime for a chapter that needs one.

export BROKER_URL=$(jq -r .broker_url .keb/dev-endpoints.json)   # http://127.0.0.1:8080, or the port you chose
export KEB_TMP=$(mktemp -d)        # the chapter's scratch files, yours alone
export CLIENT_ID=keb-dev
export CLIENT_SECRET="$(./bin/keb token --client-secret)"
export ENCODED_CREDENTIALS=$(echo -n "$CLIENT_ID:$CLIENT_SECRET" | base64 -w0)
export ACCESS_TOKEN=$(curl -s -X POST "$BROKER_URL/oauth2/token" -H "Authorization: Basic $ENCODED_CREDENTIALS" \
  -F "grant_type=client_credentials" -F "scope=broker:write" | jq -r .access_token)
export AUTHORIZATION_HEADER="Authorization: Bearer $ACCESS_TOKEN"
export KUBECTL=bin/k8s/kubectl
# The guide's global account, one for every chapter (and so one account of the pool), kept with `make run`'s data.
export GLOBAL_ACCOUNT_ID=$(cat .keb/guide-global-account 2>/dev/null || cat /proc/sys/kernel/random/uuid | tee .keb/guide-global-account)

poll() { # instance ID, operation ID: each new answer of last_operation once, until it is no longer in progress
  rm -f $KEB_TMP/lo.prev
  for i in $(seq 60); do
    curl -s "$BROKER_URL/oauth/v2/service_instances/$1/last_operation?operation=$2" \
      --header 'X-Broker-API-Version: 2.14' --header "$AUTHORIZATION_HEADER" > $KEB_TMP/lo.out
    cmp -s $KEB_TMP/lo.out $KEB_TMP/lo.prev || jq -c . $KEB_TMP/lo.out
    cp $KEB_TMP/lo.out $KEB_TMP/lo.prev
    grep -q '"in progress"' $KEB_TMP/lo.out || break; sleep 2
  done
}

patch() { # instance ID, the body's fields after service_id: a PATCH of the instance, its answer in $KEB_TMP/patch.out
  curl -s --request PATCH "$BROKER_URL/oauth/v2/service_instances/$1?accepts_incomplete=true" \
  --header 'X-Broker-API-Version: 2.14' --header 'Content-Type: application/json' --header "$AUTHORIZATION_HEADER" \
  --data-raw "{\"service_id\": \"47c9dcbf-ff30-448e-ab36-d3bad66ba281\", $2}" | tee $KEB_TMP/patch.out; echo
}

rtkube() { # the kubeconfig of the runtime of instance $1, written to $KEB_TMP; prints its path
  local rt=$($KUBECTL --kubeconfig .keb/kcp.kubeconfig get runtimes -n kcp-system -l kyma-project.io/instance-id=$1 \
    -o jsonpath='{.items[0].metadata.labels.kyma-project\.io/runtime-id}')
  $KUBECTL --kubeconfig .keb/kcp.kubeconfig get secret -n kcp-system kubeconfig-$rt -o jsonpath='{.data.config}' \
    | base64 -d > $KEB_TMP/$1.kubeconfig
  echo $KEB_TMP/$1.kubeconfig
}

new_runtime() { # name, subaccount: an Azure runtime with Service Manager credentials, provisioned and waited for;
  # sets INSTANCE_ID and RUNTIME_ID, writes the runtime's admin kubeconfig to .keb/runtime.kubeconfig and prints
  # the operation's last state
  export INSTANCE_ID=$(cat /proc/sys/kernel/random/uuid) NAME=$1
  curl -s --request PUT "$BROKER_URL/oauth/v2/service_instances/$INSTANCE_ID?accepts_incomplete=true" \
    --header 'X-Broker-API-Version: 2.14' --header 'Content-Type: application/json' --header "$AUTHORIZATION_HEADER" \
    --data-raw "{\"service_id\": \"47c9dcbf-ff30-448e-ab36-d3bad66ba281\", \"plan_id\": \"4deee563-e5ec-4731-b9b1-53b42d855f0c\",
    \"context\": {\"globalaccount_id\": \"$GLOBAL_ACCOUNT_ID\", \"subaccount_id\": \"$2\", \"user_id\": \"me@example.com\",
    \"sm_operator_credentials\": {\"clientid\": \"my-client\", \"clientsecret\": \"my-secret\",
      \"sm_url\": \"https://service-manager.example.com\", \"url\": \"https://auth.example.com\", \"xsappname\": \"my-app\"}},
    \"parameters\": {\"name\": \"$1\"}}" > $KEB_TMP/provision.out
  poll $INSTANCE_ID $(jq -r .operation $KEB_TMP/provision.out) | tail -1
  export RUNTIME_ID=$($KUBECTL --kubeconfig .keb/kcp.kubeconfig get runtimes -n kcp-system \
    -l kyma-project.io/instance-id=$INSTANCE_ID -o jsonpath='{.items[0].metadata.labels.kyma-project\.io/runtime-id}')
  $KUBECTL --kubeconfig .keb/kcp.kubeconfig get secret -n kcp-system kubeconfig-$RUNTIME_ID \
    -o jsonpath='{.data.config}' | base64 -d > .keb/runtime.kubeconfig
}
