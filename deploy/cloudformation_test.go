package deploy_test

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const cfnTemplate = "cloudformation/nodeid-service.yaml"

// cfnValue turns a YAML node of a CloudFormation template into plain values;
// a scalar with an intrinsic function's short tag reads as its text, "!Ref
// GossipKey", so that the checks see what is a reference.
func cfnValue(n *yaml.Node) any {
	switch n.Kind {
	case yaml.DocumentNode:
		return cfnValue(n.Content[0])
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = cfnValue(n.Content[i+1])
		}
		return m
	case yaml.SequenceNode:
		var s []any
		for _, c := range n.Content {
			s = append(s, cfnValue(c))
		}
		return s
	case yaml.AliasNode:
		return cfnValue(n.Alias)
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") { // !Ref, not !!str
		return n.Tag + " " + n.Value
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return n.Value
	}
	return v
}

// template is the CloudFormation template, as plain values.
type template struct {
	Parameters map[string]struct {
		Default any
		Type    string
	}
	Rules map[string]struct {
		Assertions []struct{ Assert any }
	}
	Conditions map[string]any
	Resources  map[string]struct {
		Type       string
		Condition  string
		DependsOn  []string
		Metadata   map[string]any
		Properties map[string]any
	}
	Outputs map[string]struct {
		Condition string
		Value     any
	}
}

func readTemplate(t *testing.T) template {
	t.Helper()
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(mustRead(t, cfnTemplate)), &root); err != nil {
		t.Fatal(err)
	}
	var tpl template
	recode(t, cfnValue(&root), &tpl)
	return tpl
}

// recode decodes from (plain values) into v through JSON.
func recode(t *testing.T, from, v any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}

// resource returns the properties of the template's resource name, checking
// its type.
func (tpl *template) resource(t *testing.T, name, typ string) map[string]any {
	t.Helper()
	r, ok := tpl.Resources[name]
	if !ok || r.Type != typ {
		t.Fatalf("%s: no %s resource %s", cfnTemplate, typ, name)
	}
	return r.Properties
}

// param returns a parameter's default as an integer.
func (tpl *template) param(t *testing.T, name string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(strings.Trim(jsonText(t, tpl.Parameters[name].Default), `"`)))
	if err != nil {
		t.Fatalf("%s: parameter %s: default %v", cfnTemplate, name, tpl.Parameters[name].Default)
	}
	return n
}

// containers returns the task definition's broker and application
// containers, a reference to the AppPort parameter read as its default so
// that ports decode as numbers.
func (tpl *template) containers(t *testing.T) (broker, app container) {
	t.Helper()
	text := strings.ReplaceAll(jsonText(t, tpl.resource(t, "TaskDefinition", "AWS::ECS::TaskDefinition")), `"!Ref AppPort"`, strconv.Itoa(tpl.param(t, "AppPort")))
	var td struct{ ContainerDefinitions []container }
	if err := json.Unmarshal([]byte(text), &td); err != nil {
		t.Fatalf("%s: TaskDefinition: %v", cfnTemplate, err)
	}
	if len(td.ContainerDefinitions) != 2 {
		t.Fatalf("%s: %d containers", cfnTemplate, len(td.ContainerDefinitions))
	}
	return td.ContainerDefinitions[0], td.ContainerDefinitions[1]
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCloudFormationService checks the service template against the broker's
// flags and deploy/README.md: the same sidecar as ecs-task-definition.json;
// the execution role reads the gossip key; Cloud Map names what the brokers
// join; the security group opens gossip between the tasks; the deployment
// percentages cannot deadlock a full cluster; the bucket policy and the task
// role are the JSON policies, on the stack's bucket.
func TestCloudFormationService(t *testing.T) {
	tpl := readTemplate(t)
	broker, app := tpl.containers(t)
	checkSidecar(t, cfnTemplate, broker, app)

	// The same broker as ecs-task-definition.json, but for what the stack
	// makes itself (bucket, cluster size parameter, join name, key).
	var jtd taskDefinition
	decodeFile(t, "ecs-task-definition.json", &jtd)
	jenv, cenv := jtd.ContainerDefinitions[0].env(), broker.env()
	for k, v := range jenv {
		if cv, ok := cenv[k]; !ok || cv != v && !strings.HasPrefix(cv, "!") {
			t.Errorf("%s=%q in ecs-task-definition.json, %q in %s", k, v, cv, cfnTemplate)
		}
	}
	if len(jenv) != len(cenv) || !reflect.DeepEqual(jtd.ContainerDefinitions[0].PortMappings, broker.PortMappings) {
		t.Errorf("the template's broker differs from ecs-task-definition.json's: %v %v vs %v %v", cenv, broker.PortMappings, jenv, jtd.ContainerDefinitions[0].PortMappings)
	}
	if cenv["NODEID_BUCKET"] != "!Ref LeaseBucket" || cenv["NODEID_CLUSTER_SIZE"] != "!Ref ClusterSize" || cenv["NODEID_FIRST_NODE_ID"] != "!Ref FirstNodeId" {
		t.Errorf("the broker must use the stack's bucket, ClusterSize and FirstNodeId: %v", cenv)
	}

	// The execution role may read the secret the broker's key comes from.
	var key string
	for _, s := range broker.Secrets {
		if s.Name == "NODEID_GOSSIP_KEY" {
			key = s.ValueFrom
		}
	}
	tpl.resource(t, "GossipKey", "AWS::SecretsManager::Secret")
	exec := jsonText(t, tpl.resource(t, "ExecutionRole", "AWS::IAM::Role"))
	if key != "!Ref GossipKey" || !strings.Contains(exec, `"Action":"secretsmanager:GetSecretValue","Effect":"Allow","Resource":"!Ref GossipKey"`) ||
		!strings.Contains(exec, "AmazonECSTaskExecutionRolePolicy") {
		t.Errorf("the execution role must read the gossip key %q and pull images: %s", key, exec)
	}

	// Cloud Map: the brokers join the discovery service's name in the
	// namespace, on their gossip port, and the service registers its tasks.
	disc := tpl.resource(t, "GossipDiscovery", "AWS::ServiceDiscovery::Service")
	ns := tpl.resource(t, "Namespace", "AWS::ServiceDiscovery::PrivateDnsNamespace")
	_, gossipPort, _ := strings.Cut(cenv["NODEID_GOSSIP_ADDR"], ":")
	if want := "!Sub " + disc["Name"].(string) + ".${" + strings.TrimPrefix(ns["Name"].(string), "!Ref ") + "}:" + gossipPort; cenv["NODEID_JOIN"] != want {
		t.Errorf("NODEID_JOIN %q, want %q", cenv["NODEID_JOIN"], want)
	}
	svc := tpl.resource(t, "Service", "AWS::ECS::Service")
	if s := jsonText(t, svc["ServiceRegistries"]); s != `[{"RegistryArn":"!GetAtt GossipDiscovery.Arn"}]` {
		t.Errorf("the service does not register its tasks in Cloud Map: %s", s)
	}

	// The security group lets the tasks gossip with each other, TCP and UDP.
	for _, proto := range []string{"tcp", "udp"} {
		found := false
		for _, r := range tpl.Resources {
			p := r.Properties
			found = found || r.Type == "AWS::EC2::SecurityGroupIngress" && p["IpProtocol"] == proto &&
				jsonText(t, p["FromPort"]) == gossipPort && jsonText(t, p["ToPort"]) == gossipPort &&
				p["GroupId"] == "!Ref TaskSecurityGroup" && p["SourceSecurityGroupId"] == "!Ref TaskSecurityGroup"
		}
		if !found {
			t.Errorf("no ingress for gossip (%s %s) between the tasks", proto, gossipPort)
		}
	}

	// Deployments cannot deadlock a full cluster (docs/evidence/performance.md,
	// "rolling"): ECS keeps ceil(desired x min%) healthy, so with every ID
	// held an old task may stop first only below desired; or the cluster has
	// a free ID for a new task. And a whole new fleet fits beside the old
	// one, so that no new task waits for an ID.
	dc := jsonText(t, svc["DeploymentConfiguration"])
	if !strings.Contains(dc, `"MinimumHealthyPercent":"!Ref MinimumHealthyPercent"`) || !strings.Contains(dc, `"MaximumPercent":"!Ref MaximumPercent"`) ||
		!strings.Contains(dc, `"DeploymentCircuitBreaker":{"Enable":true,"Rollback":true}`) || svc["DesiredCount"] != "!Ref DesiredCount" {
		t.Errorf("deployment configuration %s", dc)
	}
	desired, size := tpl.param(t, "DesiredCount"), tpl.param(t, "ClusterSize")
	minHealthy, maxPercent := tpl.param(t, "MinimumHealthyPercent"), tpl.param(t, "MaximumPercent")
	if keep := int(math.Ceil(float64(desired*minHealthy) / 100)); !(size > desired || keep < desired) {
		t.Errorf("DesiredCount %d, ClusterSize %d, MinimumHealthyPercent %d: a deployment of a full cluster deadlocks", desired, size, minHealthy)
	}
	if size < desired*maxPercent/100 {
		t.Errorf("ClusterSize %d is below DesiredCount %d x MaximumPercent %d%%: new tasks wait for IDs", size, desired, maxPercent)
	}

	// The bucket policy and the task role are the JSON policies of this
	// directory, on the stack's bucket.
	bucketArn := "arn:aws:s3:::my-nodeid-bucket"
	sameStatements := func(name, file string, props map[string]any) {
		t.Helper()
		var doc struct{ Statement []map[string]any }
		recode(t, props, &doc)
		var want struct{ Statement []map[string]any }
		decodeFile(t, file, &want)
		got := strings.NewReplacer(`!Sub ${LeaseBucket.Arn}`, bucketArn, `!GetAtt LeaseBucket.Arn`, bucketArn).Replace(jsonText(t, doc.Statement[:len(want.Statement)]))
		if w := jsonText(t, want.Statement); got != w {
			t.Errorf("%s's statements differ from %s:\n%s\n%s", name, file, got, w)
		}
	}
	bp := tpl.resource(t, "LeaseBucketPolicy", "AWS::S3::BucketPolicy")
	sameStatements("LeaseBucketPolicy", "s3-bucket-policy.json", bp["PolicyDocument"].(map[string]any))
	role := tpl.resource(t, "TaskRole", "AWS::IAM::Role")
	sameStatements("TaskRole", "iam-task-role-policy.json", role["Policies"].([]any)[0].(map[string]any)["PolicyDocument"].(map[string]any))
}

// TestGossipKeyFromTheSecret: the secret the template generates (32 letters
// and digits) is a key the broker accepts: base64 of 24 bytes.
func TestGossipKeyFromTheSecret(t *testing.T) {
	tpl := readTemplate(t)
	gen := tpl.resource(t, "GossipKey", "AWS::SecretsManager::Secret")["GenerateSecretString"].(map[string]any)
	if gen["PasswordLength"] != float64(32) || gen["ExcludePunctuation"] != true || gen["IncludeSpace"] != false {
		t.Fatalf("GossipKey generates %v", gen)
	}
	serve := func(key string) string {
		t.Helper()
		// A bad --s3-endpoint is checked after the key: exit 2 naming it means
		// the key passed.
		out, err := exec.Command(staticBinary(t), "serve", "--bucket", "b", "--gossip-addr", "127.0.0.1:0", "--gossip-key", key,
			"--s3-endpoint", "ftp://x").CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
			t.Fatalf("serve: %v: %s", err, out)
		}
		return string(out)
	}
	key := "aZ09" + strings.Repeat("Qx7p", 7) // 32 characters of the alphabet the secret draws from
	if out := serve(key); strings.Contains(out, "gossip-key") || !strings.Contains(out, "--s3-endpoint") {
		t.Errorf("a 32-character alphanumeric key was refused: %s", out)
	}
	if out := serve(key[:31]); !strings.Contains(out, "--gossip-key") {
		t.Errorf("a 31-character key was accepted: %s", out)
	}
}

// TestCloudFormationValidates validates the template offline with AWS
// CloudFormation Validate through the documented command,
// cloudformation/validate.sh (test/cfn-validate.sh installs the validator;
// with CI=true a missing one fails), and shows that the check can fail: a
// property the schema does not know, an attribute that does not exist.
func TestCloudFormationValidates(t *testing.T) {
	dir := os.Getenv("NODEID_TEST_CFN_VALIDATE")
	if dir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("NODEID_TEST_CFN_VALIDATE is not set (test/all.sh installs AWS CloudFormation Validate with test/cfn-validate.sh)")
		}
		t.Skip("set NODEID_TEST_CFN_VALIDATE to the directory test/cfn-validate.sh prints, or run test/all.sh")
	}
	node := tool(t, "NODEID_TEST_NODE", "node")
	validate := func(args ...string) ([]byte, error) {
		cmd := exec.Command("bash", append([]string{"cloudformation/validate.sh"}, args...)...)
		cmd.Env = append(os.Environ(), "NODEID_SERVER_CACHE="+filepath.Dir(dir),
			"PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
		return cmd.CombinedOutput()
	}
	if out, err := validate(); err != nil || !strings.Contains(string(out), "nodeid-service.yaml: 0 finding(s) of severity WARN or above") {
		t.Fatalf("validate.sh: %v: %s", err, out)
	}
	broken := strings.NewReplacer("DesiredCount: !Ref DesiredCount", "DesiredCountt: !Ref DesiredCount",
		"!GetAtt GossipDiscovery.Arn", "!GetAtt GossipDiscovery.Arnn",
		// and in the optional parts, whose conditions are false by default
		"HealthCheckPath: /ready", "HealthCheckPathh: /ready",
		"!GetAtt EcrRepository.RepositoryUri", "!GetAtt EcrRepository.RepositoryUrii").Replace(mustRead(t, cfnTemplate))
	path := filepath.Join(t.TempDir(), "broken.yaml")
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := validate(path)
	for _, planted := range []string{"DesiredCountt", "Arnn", "HealthCheckPathh", "RepositoryUrii"} {
		if err == nil || !strings.Contains(string(b), planted) {
			t.Errorf("the validator passed %s in a broken template (%v):\n%s", planted, err, b)
		}
	}
}

// TestCloudFormationImages: the images are required parameters (no
// placeholder that would deploy someone else's image), the task definition
// runs them, and the optional ECR repository has its condition and its URI
// as an output.
func TestCloudFormationImages(t *testing.T) {
	tpl := readTemplate(t)
	for _, name := range []string{"BrokerImage", "AppImage"} {
		if p, ok := tpl.Parameters[name]; !ok || p.Default != nil {
			t.Errorf("parameter %s must exist without a default: %+v", name, p)
		}
	}
	td := jsonText(t, tpl.resource(t, "TaskDefinition", "AWS::ECS::TaskDefinition"))
	if !strings.Contains(td, `"Image":"!Ref BrokerImage"`) || !strings.Contains(td, `"Image":"!Ref AppImage"`) {
		t.Errorf("the task definition does not run BrokerImage and AppImage: %s", td)
	}
	tpl.resource(t, "EcrRepository", "AWS::ECR::Repository")
	if r, o := tpl.Resources["EcrRepository"], tpl.Outputs["EcrRepositoryUri"]; r.Condition != "MakeEcrRepository" || o.Condition != r.Condition ||
		o.Value != "!GetAtt EcrRepository.RepositoryUri" || jsonText(t, tpl.Conditions[r.Condition]) != `["!Ref CreateEcrRepository","true"]` {
		t.Errorf("the ECR repository must be made when CreateEcrRepository is true, its URI an output: %+v %+v %v", r, o, tpl.Conditions[r.Condition])
	}
}

// TestCloudFormationAutoScaling: the service scales on CPU between
// MinCapacity and at most ClusterSize tasks, one node ID each: a task beyond
// ClusterSize would wait for an ID and never start.
func TestCloudFormationAutoScaling(t *testing.T) {
	tpl := readTemplate(t)
	st := tpl.resource(t, "ScalableTarget", "AWS::ApplicationAutoScaling::ScalableTarget")
	if st["ResourceId"] != "!Sub service/${EcsCluster}/${Service.Name}" || st["ScalableDimension"] != "ecs:service:DesiredCount" || st["MinCapacity"] != "!Ref MinCapacity" {
		t.Errorf("ScalableTarget %v", st)
	}
	if cap := jsonText(t, st["MaxCapacity"]); cap != `"!Ref ClusterSize"` {
		// A number, or another parameter's default, must not exceed ClusterSize's.
		n, err := strconv.Atoi(strings.Trim(cap, `"`))
		if ref, ok := strings.CutPrefix(strings.Trim(cap, `"`), "!Ref "); ok {
			n, err = tpl.param(t, ref), nil
		}
		if err != nil || n > tpl.param(t, "ClusterSize") {
			t.Errorf("autoscaling's MaxCapacity %s exceeds ClusterSize (%d)", cap, tpl.param(t, "ClusterSize"))
		}
	}
	if min, desired := tpl.param(t, "MinCapacity"), tpl.param(t, "DesiredCount"); min > desired || min < 1 {
		t.Errorf("MinCapacity %d must be 1..DesiredCount (%d)", min, desired)
	}
	pol := jsonText(t, tpl.resource(t, "CpuScaling", "AWS::ApplicationAutoScaling::ScalingPolicy"))
	for _, want := range []string{`"PolicyType":"TargetTrackingScaling"`, `"ScalingTargetId":"!Ref ScalableTarget"`, `"PredefinedMetricType":"ECSServiceAverageCPUUtilization"`} {
		if !strings.Contains(pol, want) {
			t.Errorf("CpuScaling lacks %s: %s", want, pol)
		}
	}
}

// TestCloudFormationLoadBalancer: with a listener, a target group of the
// application's port is health-checked on the broker's /ready on the
// operator port (docs/nodeid-broker.md), forwarded to by a rule that the
// service waits for, and the service registers the application container.
func TestCloudFormationLoadBalancer(t *testing.T) {
	tpl := readTemplate(t)
	broker, _ := tpl.containers(t)
	_, opsPort, _ := strings.Cut(broker.env()["NODEID_OPS_ADDR"], ":")
	tg := tpl.resource(t, "TargetGroup", "AWS::ElasticLoadBalancingV2::TargetGroup")
	if tg["HealthCheckPath"] != "/ready" || tg["HealthCheckPort"] != opsPort || !broker.published(mustAtoi(t, opsPort), "tcp") ||
		tg["Port"] != "!Ref AppPort" || tg["TargetType"] != "ip" {
		t.Errorf("the target group must route to AppPort and check /ready on the operator port %s: %v", opsPort, tg)
	}
	rule := jsonText(t, tpl.resource(t, "ListenerRule", "AWS::ElasticLoadBalancingV2::ListenerRule"))
	if !strings.Contains(rule, `"TargetGroupArn":"!Ref TargetGroup"`) {
		t.Errorf("the listener rule does not forward to the target group: %s", rule)
	}
	for _, name := range []string{"TargetGroup", "ListenerRule"} {
		if c := tpl.Resources[name].Condition; c != "UseLoadBalancer" {
			t.Errorf("%s has condition %q, want UseLoadBalancer", name, c)
		}
	}
	svc := tpl.Resources["Service"]
	lb := jsonText(t, svc.Properties["LoadBalancers"])
	if !strings.Contains(lb, "UseLoadBalancer") || !strings.Contains(lb, `"ContainerName":"app","ContainerPort":"!Ref AppPort","TargetGroupArn":"!Ref TargetGroup"`) ||
		!slices.Contains(svc.DependsOn, "ListenerRuleReady") || jsonText(t, tpl.Resources["ListenerRuleReady"].Metadata) != `{"ListenerRule":["UseLoadBalancer","!Ref ListenerRule",""]}` {
		t.Errorf("the service must register the app container in the target group after the rule exists: %s %v", lb, svc.DependsOn)
	}
}

// TestCloudFormationAppPort: the application's port is the AppPort
// parameter (default 3000) everywhere the template names it: the security
// group's ingress, the app container's port mapping, the target group and
// the service's load balancer; no resource keeps a fixed 3000; and a rule
// refuses the ports the broker binds in the same task.
func TestCloudFormationAppPort(t *testing.T) {
	tpl := readTemplate(t)
	if p := tpl.Parameters["AppPort"]; p.Type != "Number" || tpl.param(t, "AppPort") != 3000 {
		t.Fatalf("parameter AppPort must be a Number, default 3000: %+v", p)
	}
	ingress := tpl.resource(t, "AppIngress", "AWS::EC2::SecurityGroupIngress")
	if ingress["FromPort"] != "!Ref AppPort" || ingress["ToPort"] != "!Ref AppPort" || ingress["SourceSecurityGroupId"] != "!Ref ClientSecurityGroupId" {
		t.Errorf("AppIngress must open AppPort to ClientSecurityGroupId: %v", ingress)
	}
	td := jsonText(t, tpl.resource(t, "TaskDefinition", "AWS::ECS::TaskDefinition"))
	if !strings.Contains(td, `"PortMappings":[{"ContainerPort":"!Ref AppPort","Name":"app-http","Protocol":"tcp"}]`) {
		t.Errorf("the app container must map AppPort: %s", td)
	}
	if tg := tpl.resource(t, "TargetGroup", "AWS::ElasticLoadBalancingV2::TargetGroup"); tg["Port"] != "!Ref AppPort" {
		t.Errorf("the target group's port %v, want !Ref AppPort", tg["Port"])
	}
	if lb := jsonText(t, tpl.Resources["Service"].Properties["LoadBalancers"]); !strings.Contains(lb, `"ContainerPort":"!Ref AppPort"`) {
		t.Errorf("the service's load balancer must name AppPort: %s", lb)
	}
	if res := jsonText(t, tpl.Resources); strings.Contains(res, "3000") {
		t.Errorf("a resource still names port 3000 instead of AppPort")
	}
	broker, _ := tpl.containers(t)
	rule := jsonText(t, tpl.Rules["AppPortFree"].Assertions)
	for _, v := range []string{"NODEID_GOSSIP_ADDR", "NODEID_HTTP_ADDR", "NODEID_OPS_ADDR"} {
		if _, port, _ := strings.Cut(broker.env()[v], ":"); !strings.Contains(rule, `"`+port+`"`) || !strings.Contains(rule, "!Ref AppPort") {
			t.Errorf("rule AppPortFree must refuse the broker's %s port %s: %s", v, port, rule)
		}
	}
}

// TestCloudFormationS3Endpoint: the optional S3 gateway endpoint is made on
// the route tables given, in the tasks' VPC.
func TestCloudFormationS3Endpoint(t *testing.T) {
	tpl := readTemplate(t)
	ep := tpl.resource(t, "S3GatewayEndpoint", "AWS::EC2::VPCEndpoint")
	if ep["VpcEndpointType"] != "Gateway" || ep["ServiceName"] != "!Sub com.amazonaws.${AWS::Region}.s3" || ep["RouteTableIds"] != "!Ref S3GatewayRouteTableIds" ||
		ep["VpcId"] != "!Ref VpcId" || tpl.Resources["S3GatewayEndpoint"].Condition != "MakeS3GatewayEndpoint" || tpl.Parameters["S3GatewayRouteTableIds"].Type != "CommaDelimitedList" {
		t.Errorf("S3GatewayEndpoint %v", ep)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
