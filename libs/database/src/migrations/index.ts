import { CreateServiceAccounts1763800000000 } from './1763800000000-CreateServiceAccounts';
import { CreateRunsAndQueue1764000000001 } from './1764000000001-CreateRunsAndQueue';
import { CreateSchedules1764100000001 } from './1764100000001-CreateSchedules';
import { SlimQueueJobIndexes1764200000001 } from './1764200000001-SlimQueueJobIndexes';
import { ScheduleOwners1764300000001 } from './1764300000001-ScheduleOwners';
import { RunModelUsage1764400000001 } from './1764400000001-RunModelUsage';
import { ServiceAccountRotation1764500000001 } from './1764500000001-ServiceAccountRotation';
import { SchedulePolicies1764600000001 } from './1764600000001-SchedulePolicies';
import { FailedLookups1764700000001 } from './1764700000001-FailedLookups';
import { ServiceAccountNameRelease1764800000001 } from './1764800000001-ServiceAccountNameRelease';
import { QueueReservations1764900000001 } from './1764900000001-QueueReservations';
import { QueueJobCounts1765000000001 } from './1765000000001-QueueJobCounts';
import { CreateMemories1765200000001 } from './1765200000001-CreateMemories';
import { CreateTraces1765200000002 } from './1765200000002-CreateTraces';
import { ScheduleFireHeartbeats1765400000001 } from './1765400000001-ScheduleFireHeartbeats';
import { TraceSpanBatches1765500000001 } from './1765500000001-TraceSpanBatches';
import { TraceHashIndexes1765600000001 } from './1765600000001-TraceHashIndexes';
import { ScheduleFireClaimOrder1765600000002 } from './1765600000002-ScheduleFireClaimOrder';
import { TraceSummaryPerRun1765700000001 } from './1765700000001-TraceSummaryPerRun';
import { ScheduleFireLatestFinished1765800000001 } from './1765800000001-ScheduleFireLatestFinished';
import { ScheduleFireSkipCounts1765800000002 } from './1765800000002-ScheduleFireSkipCounts';
import { NewestFirstIndexes1765800000003 } from './1765800000003-NewestFirstIndexes';
import { TraceSpanAgeBtree1765800000004 } from './1765800000004-TraceSpanAgeBtree';
import { RunLeases1765900000001 } from './1765900000001-RunLeases';
import { TraceSummaryOnRuns1766000000001 } from './1766000000001-TraceSummaryOnRuns';
import { RunSpansOnRuns1766100000001 } from './1766100000001-RunSpansOnRuns';
import { ScheduleOwnerKeyFingerprint1766200000001 } from './1766200000001-ScheduleOwnerKeyFingerprint';
import { ScheduleOwnerRefusedSince1766300000001 } from './1766300000001-ScheduleOwnerRefusedSince';
import { RunMessageId1766400000001 } from './1766400000001-RunMessageId';

/** Every migration, in order. Listed explicitly so the build needs no file globbing. */
export const MIGRATIONS = [
  CreateServiceAccounts1763800000000,
  CreateRunsAndQueue1764000000001,
  CreateSchedules1764100000001,
  SlimQueueJobIndexes1764200000001,
  ScheduleOwners1764300000001,
  RunModelUsage1764400000001,
  ServiceAccountRotation1764500000001,
  SchedulePolicies1764600000001,
  FailedLookups1764700000001,
  ServiceAccountNameRelease1764800000001,
  QueueReservations1764900000001,
  QueueJobCounts1765000000001,
  CreateMemories1765200000001,
  CreateTraces1765200000002,
  ScheduleFireHeartbeats1765400000001,
  TraceSpanBatches1765500000001,
  TraceHashIndexes1765600000001,
  ScheduleFireClaimOrder1765600000002,
  TraceSummaryPerRun1765700000001,
  ScheduleFireLatestFinished1765800000001,
  ScheduleFireSkipCounts1765800000002,
  NewestFirstIndexes1765800000003,
  TraceSpanAgeBtree1765800000004,
  RunLeases1765900000001,
  TraceSummaryOnRuns1766000000001,
  RunSpansOnRuns1766100000001,
  ScheduleOwnerKeyFingerprint1766200000001,
  ScheduleOwnerRefusedSince1766300000001,
  RunMessageId1766400000001,
];
