import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.ServerVersion;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import java.io.File;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.concurrent.CountDownLatch;

/**
 * The project's local MongoDB-wire server (mongo-java-server).
 * Usage: MongoWireServer [--host 127.0.0.1] [--port 27017] [--backend h2|memory] [--file data.mv]
 * H2 persists to --file; memory keeps nothing. SIGTERM/SIGINT shut it down cleanly (H2 flushed).
 * Every backend call runs under one lock: mongo-java-server synchronizes per collection, but creating
 * a collection (implicitly, by createIndex or a first insert) races with itself and with inserts
 * ("Document with key ... already existed in system.namespaces", ConcurrentModificationException).
 * Durability: H2 on its own saves about once a second, so a kill -9 lost the last second of
 * acknowledged writes (111 of 500 survived). Every message that leaves unsaved changes is committed
 * to the file before it is answered; that survives a process crash (not a power cut: no fsync).
 */
public final class MongoWireServer {
  public static void main(String[] args) throws Exception {
    String host = "127.0.0.1", backendName = "h2", file = "platform.mv";
    int port = 27017;
    for (int i = 0; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--host": host = args[i + 1]; break;
        case "--port": port = Integer.parseInt(args[i + 1]); break;
        case "--backend": backendName = args[i + 1]; break;
        case "--file": file = args[i + 1]; break;
        default: throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    MongoBackend backend;
    H2Backend h2 = null;
    if (backendName.equals("memory")) {
      backend = new MemoryBackend();
    } else if (backendName.equals("h2")) {
      File parent = new File(file).getAbsoluteFile().getParentFile();
      if (parent != null) parent.mkdirs();
      h2 = new H2Backend(file);
      backend = h2;
    } else {
      throw new IllegalArgumentException("--backend must be h2 or memory, not " + backendName);
    }
    // The Node driver 6.20 needs wire version >= 8 (MongoDB 4.2); the default (3.6) answers 6, 5.0 answers 8.
    backend.version(ServerVersion.MONGO_5_0);
    MongoBackend target = backend;
    H2Backend durable = h2;
    Object lock = new Object();
    MongoBackend serialized = (MongoBackend) Proxy.newProxyInstance(MongoBackend.class.getClassLoader(),
        new Class<?>[] {MongoBackend.class}, (proxy, method, margs) -> {
          synchronized (lock) {
            try {
              Object result = method.invoke(target, margs);
              if (durable != null && durable.getMvStore().hasUnsavedChanges()) durable.commit();
              return result;
            } catch (InvocationTargetException e) {
              throw e.getCause();
            }
          }
        });
    MongoServer server = new MongoServer(serialized);
    String label = backendName;
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      System.out.println("mongo-wire: shutting down (" + label + ")");
      server.shutdownNow(); // closes clients, then the backend (H2 commits and closes its file)
      stopped.countDown();
    }));
    server.bind(host, port);
    System.out.println("mongo-wire: listening on " + host + ":" + port + " backend=" + backendName
        + (backendName.equals("h2") ? " file=" + new File(file).getAbsolutePath() : ""));
    stopped.await();
  }
}
