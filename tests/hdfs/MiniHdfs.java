// A real HDFS for the tests: one NameNode and one DataNode in this JVM (Hadoop's
// MiniDFSCluster), WebHDFS on, listening on 127.0.0.1 only.
// Run as a single-file program: java -cp 'JARS/*' MiniHdfs.java BASEDIR RPCPORT HTTPPORT
// It prints "READY hdfs://127.0.0.1:RPCPORT http://127.0.0.1:HTTPPORT" once it serves.
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

public class MiniHdfs {
  public static void main(String[] args) throws Exception {
    Configuration conf = new Configuration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, args[0]);
    conf.setBoolean("dfs.webhdfs.enabled", true);
    // Any user may write anywhere: the tests run as whoever runs them.
    conf.setBoolean("dfs.permissions.enabled", false);
    conf.set("dfs.datanode.address", "127.0.0.1:0");
    conf.set("dfs.datanode.http.address", "127.0.0.1:0");
    conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
    int rpcPort = Integer.parseInt(args[1]);
    int httpPort = Integer.parseInt(args[2]);
    MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
        .nameNodePort(rpcPort).nameNodeHttpPort(httpPort).numDataNodes(1).build();
    cluster.waitActive();
    Runtime.getRuntime().addShutdownHook(new Thread(cluster::shutdown));
    System.out.println("READY hdfs://127.0.0.1:" + cluster.getNameNodePort()
        + " http://127.0.0.1:" + httpPort);
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE);
  }
}
